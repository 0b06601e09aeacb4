import ScrollModel
import Synchronization
import Transport
import WebSocketCore

/// `GET /rooms/{name}`: the ScrollSync protocol (Protocol/PROTOCOL.md).
/// Query: `role=presenter|follower` (default follower), `key=…`, `name=…`.
public struct RoomEndpoint: WebSocketEndpoint {
    public let limits: WebSocketConnection.Limits
    /// The hub, message limits, scroll rate and counters: what every member of this endpoint
    /// shares (one object, not a copy per connection).
    private let shared: RoomMember.Shared
    public var hub: any RoomHub { shared.hub }
    public var messageLimits: ClientMessage.Limits { shared.limits }
    /// Scrolls per second per presenter (0: no limit) and the burst allowed before it applies.
    public var scrollRate: Double { shared.scrollRate }
    public var scrollBurst: Int { Int(shared.scrollBurst) }
    public var subprotocols: [String] { [protocolName] }
    public var sharesCompressedFrames: Bool { true }
    /// 64 KiB: a few hundred states at most wait in the kernel for a slow follower; the
    /// rest of its backlog is conflated into the newest state.
    public var socketSendBuffer: Int? { 64 << 10 }

    /// - Parameter limits: 2 MiB messages: a 1 MiB document, escaped, fits.
    public init(hub: any RoomHub, limits: WebSocketConnection.Limits = .init(maxFrameSize: 2 << 20, maxMessageSize: 2 << 20),
                messageLimits: ClientMessage.Limits = .init(), scrollRate: Double = 0, scrollBurst: Int = 1) {
        self.init(hub: hub, limits: limits, messageLimits: messageLimits, scrollRate: scrollRate, scrollBurst: scrollBurst, counters: nil)
    }

    init(hub: any RoomHub, limits: WebSocketConnection.Limits, messageLimits: ClientMessage.Limits, scrollRate: Double, scrollBurst: Int,
         counters: ServerCounters?) {
        self.limits = limits
        shared = RoomMember.Shared(hub: hub, limits: messageLimits, scrollRate: scrollRate, scrollBurst: Double(max(1, scrollBurst)),
                                   counters: counters)
    }

    public func matches(path: Substring) -> Bool { path.hasPrefix("/rooms/") }

    public func makeSession(for request: HTTPRequest, on loop: EventLoop) -> Result<any WebSocketSession, HTTPError> {
        let name = String(request.path.dropFirst("/rooms/".count))
        guard Self.isValidRoomName(name) else {
            return .failure(HTTPError(.error(400, "room names are 1 to 64 characters of A-Z a-z 0-9 . _ -")))
        }
        let query = Query(request.query)
        let role: Role
        switch query["role"] {
        case nil, "follower": role = .follower
        case "presenter": role = .presenter
        case let other?: return .failure(HTTPError(.error(400, "role must be presenter or follower, not \(other.prefix(32))")))
        }
        if let refusal = hub.admission(room: name) {
            return .failure(HTTPError(.error(503, refusal, headers: [("Retry-After", "10")])))
        }
        let displayName = query["name"].map { String($0.prefix(64)) }
        let bucket = role == .presenter && scrollRate > 0 ? TokenBucket(burst: shared.scrollBurst, now: loop.now) : nil
        return .success(RoomMember(shared: shared, room: name, role: role, name: displayName, key: query["key"], scrollBucket: bucket))
    }

    static func isValidRoomName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy {
            switch $0 {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
    }
}

/// A token bucket of `burst` tokens, refilled at `rate` per second (both given by the
/// owner, which shares them with other buckets).
struct TokenBucket {
    private var tokens: Double
    private var updated: UInt64

    init(burst: Double, now: UInt64) {
        tokens = burst
        updated = now
    }

    /// Takes a token if there is one.
    mutating func take(now: UInt64, rate: Double, burst: Double) -> Bool {
        tokens = min(burst, tokens + Double(now &- updated) / 1e9 * rate)
        updated = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

extension WebSocketPeer {
    @discardableResult
    func send(text bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(text: $0) }
    }
}

/// Session ids, unique in a process (a counter through a bijective mix, SplitMix64's) and
/// across nodes for all practical purposes (a random seed per process). Ids are public
/// (`driver`, `state.by`), not secrets; one `getrandom` per process, not per connection,
/// keeps them off the handshake's cost.
extension SessionID {
    private static let seed = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    static func make() -> SessionID {
        var z = seed &+ counter.add(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return SessionID(z ^ (z >> 31))
    }
}

/// `application/x-www-form-urlencoded` query parameters (first value wins).
struct Query {
    private var values: [String: String] = [:]

    init(_ query: Substring) {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(parts[0])
            if values[name] == nil { values[name] = parts.count > 1 ? Self.decode(parts[1]) : "" }
        }
    }

    subscript(name: String) -> String? { values[name] }

    static func decode(_ text: Substring) -> String {
        var bytes = [UInt8]()
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                if let high = iterator.next(), let low = iterator.next(), let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                    bytes.append(value)
                }
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
