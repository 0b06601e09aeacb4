package import Access
import Synchronization
import WebSocketChannel
import WebSocketCore

/// Server-wide counters (relaxed atomics: written by every loop, read by /metrics): what its
/// links count (`LinkCounters`: upgraded connections, messages, bytes) and the rest.
/// Per-message counts are summed per read or drain, never per delivery.
public final class ServerCounters: LinkCounters, @unchecked Sendable {
    /// Connections by phase (upgraded ones: `connectionsUpgraded`).
    public let connectionsOpen = Atomic<Int>(0)
    public let connectionsAccepted = Atomic<Int>(0)
    /// Requests answered with an HTTP status ≥ 400, by status (see `refusalStatuses`).
    let refusals = (0..<ServerCounters.refusalStatuses.count).map { _ in Counter() }
    /// Close codes of ended WebSocket connections (1000…1015, and others as 0).
    let closeCodes = (0..<17).map { _ in Counter() }
    /// Scrolls refused with `rate_limited`.
    public let rateLimited = Atomic<Int>(0)
    /// Refusals by reason (the hub, the router and the room endpoint count into it).
    public let refusalReasons = RefusalCounters()
    /// `error` replies not sent because the connection had its share for the second.
    public let errorsUnanswered = Atomic<Int>(0)

    /// Statuses counted one by one; any other ≥ 400 counts under the last (0).
    package static let refusalStatuses = [400, 401, 403, 404, 405, 408, 426, 429, 431, 503, 0]

    public override init() {}

    package func refused(status: Int) {
        let index = Self.refusalStatuses.firstIndex(of: status) ?? Self.refusalStatuses.count - 1
        refusals[index].add(1)
    }

    /// Requests refused with `status`.
    public func refusals(status: Int) -> Int {
        Self.refusalStatuses.firstIndex(of: status).map { refusals[$0].value } ?? 0
    }

    public var upgradesRefused: Int { refusals.reduce(0) { $0 + $1.value } }

    public override func closed(code: CloseCode) {
        let index = (1000...1015).contains(Int(code.rawValue)) ? Int(code.rawValue) - 999 : 0
        closeCodes[index].add(1)
    }

    /// (code, count) for every close code seen; code 0 collects the rest.
    package var closeCodeCounts: [(Int, Int)] {
        closeCodes.enumerated().compactMap { index, count in
            let value = count.value
            return value == 0 ? nil : (index == 0 ? 0 : index + 999, value)
        }
    }
}

/// Why requests and joins were refused, beside their HTTP status: what /metrics shows as
/// `scrollsync_refusals_total{reason}`.
public enum RefusalReason: String, CaseIterable, Sendable {
    /// A browser page of another site (`Origin`).
    case origin
    /// A private room without its follow key, or with a wrong one.
    case followKey = "follow_key"
    /// No token where one is required, or one that is invalid, expired, or for another room or role.
    case token
    /// The address had as many wrong keys (and key checks running) for the room as it may.
    case keyLimit = "key_limit"
    /// The address created rooms too fast, or holds too many unclaimed ones.
    case roomCreations = "room_creations"
    /// The server holds as many rooms as it may, or the room as many members.
    case roomLimit = "room_limit"
    /// Too many connections in all, or from the address.
    case connections
    /// A room connection sent more messages than `limits.messagesPerSecond` allows (closed 1008).
    case messageFlood = "message_flood"
    /// A recording asked for did not fit the address's share or the server's budget of recordings.
    case recordingBudget = "recording_budget"
}

/// A counter per refusal reason.
public final class RefusalCounters: Sendable {
    private let counters = RefusalReason.allCases.map { _ in Counter() }
    public init() {}
    package func count(_ reason: RefusalReason) { counters[RefusalReason.allCases.firstIndex(of: reason)!].add(1) }
    public func value(_ reason: RefusalReason) -> Int { counters[RefusalReason.allCases.firstIndex(of: reason)!].value }
}
