package import RoomKit
import ScrollModel
import Transport
import WebSocketChannel
import WebSocketCore

/// One connection in a room: the session that reads what it sends, and what its room
/// needs to deliver broadcasts to it. One object per connection; the endpoint's settings
/// are shared by all its members (`Shared`), so an idle member costs a few dozen bytes.
public final class RoomMember: WebSocketSession {
    /// The endpoint's settings and services, held once for all its members.
    package final class Shared: Sendable {
        package let hub: any RoomHub
        package let limits: ClientMessage.Limits
        /// Scrolls and documents per presenter (nil: no limit).
        package let scrollLimit: RateLimit?
        package let documentLimit: RateLimit?
        /// Messages of any kind per connection (nil: no limit); past its burst: close 1008.
        package let messageLimit: RateLimit?
        package let counters: ServerCounters?
        /// Where its members' ids come from (the process's source unless the server was given one).
        package let ids: SessionIDSource

        package init(hub: any RoomHub, limits: ClientMessage.Limits, scrollLimit: RateLimit?, documentLimit: RateLimit?, messageLimit: RateLimit? = nil,
             counters: ServerCounters?, ids: SessionIDSource = .process) {
            self.hub = hub
            self.ids = ids
            self.limits = limits
            self.scrollLimit = scrollLimit
            self.documentLimit = documentLimit
            self.messageLimit = messageLimit
            self.counters = counters
        }
    }

    private enum Stage: UInt8 {
        /// Not yet opened.
        case new
        /// Opened; its join waits (the room is fetched from another node's store).
        case joining
        /// In its room.
        case joined
        /// Its join was refused, or it left.
        case ended
    }

    /// What only some members need for long, held apart so that most carry none of it: a
    /// joining member's key, name and early messages (dropped once it is in its room), and a
    /// rate-limited presenter's token bucket (kept for its life), and for a member that sends
    /// anything after its join, its inbound bucket and error budget. (Its member's loop only,
    /// plain reads and writes: no run-time exclusivity check on the fields a join clears.)
    private final class Extras {
        /// The room it asked for, until it is in it (then the hub's handle names it).
        var room: String
        /// The presenter key it gave, until its join uses it.
        @exclusivity(unchecked) var key: String?
        @exclusivity(unchecked) var name: String?
        /// The follow key it gave (a follower's to a private room; a presenter's to make its
        /// room private), until its join uses it.
        @exclusivity(unchecked) var followKey: String?
        /// An application's signed token admitted it in its role (no key is asked for).
        @exclusivity(unchecked) var authorized = false
        /// A presenter asked for the room to be recorded (`record=1`).
        @exclusivity(unchecked) var record = false
        /// What it sent before its welcome, kept for after it.
        @exclusivity(unchecked) var waiting: [[UInt8]] = []
        /// A presenter's scrolls and documents over their rates (nil: not limited). Changed
        /// through key paths (`limitRate`) on a copy, set back whole.
        @exclusivity(unchecked) var scrollGate: RateGate?
        @exclusivity(unchecked) var documentGate: RateGate?
        /// Every message it sends after its welcome (made at its first one); read and set whole.
        @exclusivity(unchecked) var inbound: InboundGate?
        /// The client's address, which a room it creates is counted against.
        let address: String

        init(room: String, key: String?, name: String?, scrollGate: RateGate?, documentGate: RateGate?, address: String) {
            self.address = address
            self.room = room
            self.key = key
            self.name = name
            self.scrollGate = scrollGate
            self.documentGate = documentGate
        }

        /// Forgets what the join needed; true when nothing is left.
        func joined() -> Bool {
            key = nil
            name = nil
            followKey = nil
            waiting = []
            return scrollGate == nil && documentGate == nil && inbound == nil
        }
    }

    // Stored large to small, as there is one member per connection (72 bytes with the
    // object's header: a 16-byte step smaller would need a field fewer).
    // The fields below are loop-thread only and read or set whole, never changed in place
    // by anything that calls out: no run-time exclusivity check (a join touches each).
    /// The session id, given when the connection opens.
    @exclusivity(unchecked) public private(set) var id = SessionID(0)
    /// The connection (a constant: a delivery reads it without a reference count). It holds
    /// the member as its session until it closes.
    public let peer: WebSocketLink
    private let shared: Shared
    @exclusivity(unchecked) private var extras: Extras?
    /// The hub's handle on the room it is in: set when it joins, cleared when it leaves.
    /// (The room's own object rather than its name: no lookup per message, and one copy
    /// of the name for all its members.)
    @exclusivity(unchecked) var roomHandle: AnyObject?
    /// Highest `seq` delivered, so a member never sees a state twice or out of order.
    /// (Loop-thread only, changed in place by nothing that calls out: no run-time
    /// exclusivity check, as for `lastDocument`; both are read and set once per delivery.)
    @exclusivity(unchecked) var lastSeq = SeqMark.none
    /// Position in its local room's member list (for O(1) removal).
    @exclusivity(unchecked) var slot: Int32 = -1
    /// The room's version of the last document delivered (its welcome counts).
    @exclusivity(unchecked) var lastDocument: UInt32 = 0
    @exclusivity(unchecked) private var stage = Stage.new
    let role: Role
    /// The compressor window this receiver accepts, or 0 to send uncompressed.
    private var window: Int8 = 0
    /// It left (disconnected), perhaps while its join waited.
    var left = false

    package init(shared: Shared, peer: WebSocketLink, room: String, role: Role, name: String?, key: String?, address: String,
         followKey: String? = nil, authorized: Bool = false, record: Bool = false) {
        self.shared = shared
        self.peer = peer
        self.role = role
        let now = peer.channel.loop.now
        let presenter = role == .presenter
        extras = Extras(room: room, key: key, name: name, scrollGate: presenter ? shared.scrollLimit.map { RateGate($0, now: now) } : nil,
                        documentGate: presenter ? shared.documentLimit.map { RateGate($0, now: now) } : nil, address: address)
        extras?.followKey = followKey
        extras?.authorized = authorized
        extras?.record = record
    }

    /// The display name it gave, while it joins (its room keeps it after that).
    var name: String? { extras?.name }

    /// The follow key it gave, while it joins.
    var followKey: String? { extras?.followKey }

    /// Whether a signed token admitted it (while it joins).
    var authorized: Bool { extras?.authorized ?? false }

    /// Whether it asked for its room to be recorded (while it joins).
    var asksToRecord: Bool { extras?.record ?? false }

    /// The client's address, while it joins.
    var address: String { extras?.address ?? peer.channel.peerAddress }

    /// The compressor window this receiver accepts (nil: send uncompressed).
    var windowBits: Int? { window == 0 ? nil : Int(window) }

    // MARK: WebSocketSession

    public func opened(_ peer: WebSocketLink) {
        guard stage == .new, peer === self.peer, let extras else { return }
        id = shared.ids.make()
        if let deflate = peer.deflate {
            let bits = deflate.serverMaxWindowBits ?? 15
            window = bits >= 9 ? Int8(bits) : 0
        }
        stage = .joining
        let key = extras.key
        extras.key = nil  // the key is not kept longer than needed
        shared.hub.join(self, room: extras.room, role: role, key: key)
    }

    /// The hub's answer to its join (`RoomHub.join`): at once, or later on its loop. Only
    /// the first answer to a joining member counts.
    package func joined(_ result: Result<RoomCore.Welcome, ProtocolError>) {
        guard stage == .joining, let extras else { return }
        let room = extras.room
        let early = extras.waiting
        if extras.joined() { self.extras = nil }
        switch result {
        case .failure(let error):
            stage = .ended
            peer.send(text: ServerMessage.error(error))
            peer.close(code: .policyViolation, reason: error.message)
        case .success(let welcome):
            stage = .joined
            guard peer.screenSize == nil else { return }  // a terminal reader is sent frames, not messages
            peer.send(text: ServerMessage.welcome(
                room: room, you: id, role: role, state: welcome.state, driver: welcome.driver, driverName: welcome.driverName,
                presence: welcome.presence, document: welcome.document, recording: welcome.recording))
            if let document = welcome.document { peer.send(text: ServerMessage.document(document)) }
            if let problem = welcome.recordingProblem { peer.send(text: ServerMessage.error(ProtocolError(.tooLarge, problem))) }
            for text in early { text.withUnsafeBytes { received(text: $0, from: peer) } }
        }
    }

    public func received(text: UnsafeRawBufferPointer, from peer: WebSocketLink) {
        switch stage {
        case .joined: break
        case .joining:
            // Sent before the welcome, while the room is fetched from another node's store:
            // kept for after it (up to 16 messages, 64 KiB).
            if let extras, extras.waiting.count < 16 && extras.waiting.reduce(text.count, { $0 + $1.count }) <= 64 << 10 {
                extras.waiting.append(Array(text))
            } else {
                peer.send(text: ServerMessage.error(ProtocolError(.badMessage, "wait for welcome: more than 16 messages or 64 KiB came before it; this one was dropped")))
            }
            return
        case .new, .ended: return
        }
        if let limit = shared.messageLimit {
            let extras = extras ?? Extras(room: "", key: nil, name: nil, scrollGate: nil, documentGate: nil, address: peer.channel.peerAddress)
            self.extras = extras
            var inbound = extras.inbound ?? InboundGate(limit, now: peer.channel.loop.now)
            guard inbound.take(now: peer.channel.loop.now) else {
                shared.counters?.refusalReasons.count(.messageFlood)
                // It leaves its room now (messages it already sent are not read), then closes.
                shared.hub.leave(self)
                stage = .ended
                peer.close(code: .policyViolation, reason: "more than \(limit.description) (a burst of \(Int(limit.burst)))")
                return
            }
            extras.inbound = inbound
        }
        let refusal: ProtocolError?
        do {
            let message = try ClientMessage.decode(text, limits: shared.limits)
            if case .scroll = message, let extras, extras.scrollGate != nil {
                refusal = limitRate(message, \.scrollGate, extras: extras, peer: peer)
            } else if case .document = message, let extras, extras.documentGate != nil {
                refusal = limitRate(message, \.documentGate, extras: extras, peer: peer)
            } else {
                refusal = shared.hub.receive(message, from: self)
            }
        } catch {
            refusal = error
        }
        if let refusal { answer(refusal, peer: peer) }
    }

    /// Sends an `error` within the connection's error budget (`InboundGate`): a client that sends
    /// nothing but refused messages costs decoding, not a reply each.
    private func answer(_ refusal: ProtocolError, peer: WebSocketLink) {
        if let extras, var inbound = extras.inbound {
            let allowed = inbound.mayAnswer(now: peer.channel.loop.now)
            extras.inbound = inbound
            guard allowed else {
                shared.counters?.errorsUnanswered.add(1, ordering: .relaxed)
                return
            }
        }
        peer.send(text: ServerMessage.error(refusal))
    }

    /// A message under its rate goes to the room at once; one over it waits as the gate's
    /// pending message (replacing an older one) until the bucket has a token, so the newest
    /// place or document always reaches the room. `rate_limited` says so at most once a second.
    private func limitRate(_ message: ClientMessage, _ gate: ReferenceWritableKeyPath<Extras, RateGate?>, extras: Extras,
                           peer: WebSocketLink) -> ProtocolError? {
        let now = peer.channel.loop.now
        guard var state = extras[keyPath: gate] else { return shared.hub.receive(message, from: self) }
        defer { extras[keyPath: gate] = state }
        if state.pending == nil, state.take(now: now) { return shared.hub.receive(message, from: self) }
        shared.counters?.rateLimited.add(1, ordering: .relaxed)
        let waiting = state.pending != nil
        state.pending = message
        if !waiting { scheduleRelease(gate, after: state.wait(), peer: peer) }
        guard state.noticeAt == 0 || now &- state.noticeAt >= 1_000_000_000 else { return nil }
        state.noticeAt = now
        return ProtocolError(.rateLimited, "more than \(state.limit.description): the newest goes to the room when the rate allows, older ones are dropped")
    }

    private func scheduleRelease(_ gate: ReferenceWritableKeyPath<Extras, RateGate?>, after delay: UInt64, peer: WebSocketLink) {
        peer.channel.loop.schedule(after: max(delay, 1_000_000)) { [self] in
            guard stage == .joined, let extras, var state = extras[keyPath: gate], let message = state.pending else { return }
            guard state.take(now: peer.channel.loop.now) else {
                scheduleRelease(gate, after: state.wait(), peer: peer)
                extras[keyPath: gate] = state
                return
            }
            state.pending = nil
            extras[keyPath: gate] = state
            if let refusal = shared.hub.receive(message, from: self) { peer.send(text: ServerMessage.error(refusal)) }
        }
    }

    public func received(binary: UnsafeRawBufferPointer, from peer: WebSocketLink) {
        peer.send(text: ServerMessage.error(ProtocolError(.badMessage, "scrollsync.v1 messages are JSON text frames, not binary")))
    }

    public func closed(_ peer: WebSocketLink, code: CloseCode) {
        let stage = self.stage
        self.stage = .ended
        extras = nil
        switch stage {
        case .joining: left = true
        case .joined: shared.hub.leave(self)
        case .new, .ended: break
        }
    }
}

/// A per-presenter rate: `rate` messages a second, `burst` at once.
package struct RateLimit: Sendable {
    package let rate: Double
    package let burst: Double
    /// What is limited, for `rate_limited`'s message ("1000 scrolls per second").
    package let description: String

    package init(rate: Double, burst: Double, description: String) {
        (self.rate, self.burst, self.description) = (rate, burst, description)
    }
}

/// A rate limit that conflates: a token bucket, and the newest message over the rate.
struct RateGate {
    let limit: RateLimit
    private var bucket: TokenBucket
    var pending: ClientMessage?
    /// When `rate_limited` was last sent.
    var noticeAt: UInt64 = 0

    init(_ limit: RateLimit, now: UInt64) {
        self.limit = limit
        bucket = TokenBucket(burst: limit.burst, now: now)
    }

    mutating func take(now: UInt64) -> Bool { bucket.take(now: now, rate: limit.rate, burst: limit.burst) }
    func wait() -> UInt64 { bucket.wait(rate: limit.rate) }
}

/// What one connection sends: a token bucket over every message, and one over the `error`
/// replies it gets.
struct InboundGate {
    /// Error replies per connection: 100 at once, then 10 a second. Enough to say what is
    /// wrong with each message of a test or a buggy client, never one per message of a flood.
    static let errorBurst = 100.0
    static let errorsPerSecond = 10.0
    let limit: RateLimit
    private var bucket: TokenBucket
    private var errors: TokenBucket

    init(_ limit: RateLimit, now: UInt64) {
        self.limit = limit
        bucket = TokenBucket(burst: limit.burst, now: now)
        errors = TokenBucket(burst: Self.errorBurst, now: now)
    }

    mutating func take(now: UInt64) -> Bool { bucket.take(now: now, rate: limit.rate, burst: limit.burst) }

    /// Whether one more error may be answered now (and counts it).
    mutating func mayAnswer(now: UInt64) -> Bool { errors.take(now: now, rate: Self.errorsPerSecond, burst: Self.errorBurst) }
}

/// The last `seq` sent to a member, in 4 bytes: its distance from its local room's base
/// (`LocalRoom.mark`). The room moves the base, and every member's mark with it, when a `seq`
/// comes too far from it (a new Redis hash numbers from the wall clock, docs/cluster.md §2):
/// a mark too old for the new base becomes `none`, older than any.
struct SeqMark: Equatable {
    var offset: Int32

    /// Before any state (a welcome without one).
    static let none = SeqMark(offset: .min)

    /// Whether `other` is newer than the mark.
    func precedes(_ other: SeqMark) -> Bool { other.offset > offset }

    /// A count that grows one by one (a terminal reader's frame generation), in its low 32
    /// bits: ordered by wrapping difference (`precedesWrapping`), across the wrap.
    init(wrapping count: Int) { offset = Int32(truncatingIfNeeded: count) }

    init(offset: Int32) { self.offset = offset }

    func precedesWrapping(_ other: SeqMark) -> Bool { other.offset &- offset > 0 }
}
