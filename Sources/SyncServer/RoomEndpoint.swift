import ScrollModel
import Synchronization
import Transport
import WebSocketCore

/// `GET /rooms/{name}`: the ScrollSync protocol (Protocol/PROTOCOL.md).
/// Query: `role=presenter|follower` (default follower), `key=…`, `name=…`.
public struct RoomEndpoint: WebSocketEndpoint {
    public let hub: any RoomHub
    public let limits: WebSocketConnection.Limits
    public let messageLimits: ClientMessage.Limits
    /// Scrolls per second per presenter (0: no limit) and the burst allowed before it applies.
    public let scrollRate: Double
    public let scrollBurst: Int
    let counters: ServerCounters?
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
        self.hub = hub
        self.limits = limits
        self.messageLimits = messageLimits
        self.scrollRate = scrollRate
        self.scrollBurst = max(1, scrollBurst)
        self.counters = counters
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
        let bucket = role == .presenter && scrollRate > 0 ? TokenBucket(rate: scrollRate, burst: scrollBurst, now: loop.now) : nil
        return .success(RoomSession(hub: hub, room: name, role: role, name: displayName, key: query["key"], limits: messageLimits,
                                    scrollBucket: bucket, counters: counters))
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

/// One connection in a room.
final class RoomSession: WebSocketSession {
    private let hub: any RoomHub
    private let room: String
    private let role: Role
    private let name: String?
    private var key: String?
    private let limits: ClientMessage.Limits
    private var member: RoomMember?
    /// The member while its join waits, and what it sent meanwhile.
    private var joining: RoomMember?
    private var waiting: [[UInt8]] = []
    private var scrollBucket: TokenBucket?
    private let counters: ServerCounters?

    init(hub: any RoomHub, room: String, role: Role, name: String?, key: String?, limits: ClientMessage.Limits,
         scrollBucket: TokenBucket?, counters: ServerCounters?) {
        self.hub = hub
        self.room = room
        self.role = role
        self.name = name
        self.key = key
        self.limits = limits
        self.scrollBucket = scrollBucket
        self.counters = counters
    }

    func opened(_ peer: WebSocketPeer) {
        let member = RoomMember(id: SessionID.make(), name: name, peer: peer)
        joining = member
        hub.join(member, room: room, role: role, key: key) { [self] result in
            joining = nil
            switch result {
            case .failure(let error):
                peer.send(text: ServerMessage.error(error))
                peer.close(code: .policyViolation, reason: error.message)
            case .success(let welcome):
                self.member = member
                peer.send(text: ServerMessage.welcome(
                    room: room, you: member.id, role: role, state: welcome.state, driver: welcome.driver,
                    presence: welcome.presence, document: welcome.document))
                if let document = welcome.document { peer.send(text: ServerMessage.document(document)) }
                let early = waiting
                waiting = []
                for text in early { text.withUnsafeBytes { received(text: $0, from: peer) } }
            }
        }
        key = nil  // not kept longer than needed
    }

    func received(text: UnsafeRawBufferPointer, from peer: WebSocketPeer) {
        guard let member else {
            // Sent before the welcome, while the room is fetched from another node's store:
            // kept for after it (up to 16 messages, 64 KiB).
            if joining != nil {
                if waiting.count < 16 && waiting.reduce(text.count, { $0 + $1.count }) <= 64 << 10 {
                    waiting.append(Array(text))
                } else {
                    peer.send(text: ServerMessage.error(ProtocolError(.badMessage, "wait for welcome: more than 16 messages or 64 KiB came before it; this one was dropped")))
                }
            }
            return
        }
        let refusal: ProtocolError?
        do {
            let message = try ClientMessage.decode(text, limits: limits)
            if case .scroll = message, scrollBucket?.take(now: peer.channel.loop.now) == false {
                counters?.rateLimited.add(1, ordering: .relaxed)
                refusal = ProtocolError(.rateLimited, "more than \(scrollBucket!.rateText) scrolls per second; this one was dropped")
            } else {
                refusal = hub.receive(message, from: member)
            }
        } catch {
            refusal = error
        }
        if let refusal { peer.send(text: ServerMessage.error(refusal)) }
    }

    func received(binary: UnsafeRawBufferPointer, from peer: WebSocketPeer) {
        peer.send(text: ServerMessage.error(ProtocolError(.badMessage, "scrollsync.v1 messages are JSON text frames, not binary")))
    }

    func closed(_ peer: WebSocketPeer, code: CloseCode) {
        joining?.left = true
        joining = nil
        if let member { hub.leave(member) }
        member = nil
    }
}

/// A token bucket: `burst` tokens, refilled at `rate` per second.
struct TokenBucket {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var updated: UInt64

    init(rate: Double, burst: Int, now: UInt64) {
        self.rate = rate
        self.burst = Double(burst)
        tokens = Double(burst)
        updated = now
    }

    /// Takes a token if there is one.
    mutating func take(now: UInt64) -> Bool {
        tokens = min(burst, tokens + Double(now &- updated) / 1e9 * rate)
        updated = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    var rateText: String { rate.rounded() == rate ? String(Int(rate)) : String(rate) }
}

extension WebSocketPeer {
    @discardableResult
    func send(text bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(text: $0) }
    }
}

/// Session ids: 16 hex digits, unique in a process (a counter through a bijective mix,
/// SplitMix64's) and across nodes for all practical purposes (a random seed per process).
/// Ids are public (`driver`, `state.by`), not secrets; one `getrandom` per process, not per
/// connection, keeps them off the handshake's cost.
enum SessionID {
    private static let seed = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    static func make() -> String {
        var z = seed &+ counter.add(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        let hex = String(z, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
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
