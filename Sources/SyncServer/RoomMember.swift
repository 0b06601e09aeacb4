import ScrollModel
import Transport
import WebSocketCore

/// One connection in a room: the session that reads what it sends, and what its room
/// needs to deliver broadcasts to it. One object per connection; the endpoint's settings
/// are shared by all its members (`Shared`), so an idle member costs a few dozen bytes.
public final class RoomMember: WebSocketSession {
    /// The endpoint's settings and services, held once for all its members.
    final class Shared: Sendable {
        let hub: any RoomHub
        let limits: ClientMessage.Limits
        /// Scrolls per second per presenter (0: no limit), and the burst before it applies.
        let scrollRate: Double
        let scrollBurst: Double
        let counters: ServerCounters?

        init(hub: any RoomHub, limits: ClientMessage.Limits, scrollRate: Double, scrollBurst: Double, counters: ServerCounters?) {
            self.hub = hub
            self.limits = limits
            self.scrollRate = scrollRate
            self.scrollBurst = scrollBurst
            self.counters = counters
        }

        var scrollRateText: String { scrollRate.rounded() == scrollRate ? String(Int(scrollRate)) : String(scrollRate) }
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

    /// What a member needs only until it is in its room: held apart, so a member that has
    /// joined carries none of it.
    private final class Joining {
        /// The presenter key it gave, until its join uses it.
        var key: String?
        let name: String?
        /// What it sent before its welcome, kept for after it.
        var waiting: [[UInt8]] = []

        init(key: String?, name: String?) {
            self.key = key
            self.name = name
        }
    }

    /// Scrolls a presenter may still send (presenters only, with a rate limit).
    private final class ScrollAllowance {
        var bucket: TokenBucket
        init(_ bucket: TokenBucket) { self.bucket = bucket }
    }

    // Stored large to small, as there is one member per connection.
    /// The room it asked for.
    let requestedRoom: String
    /// The session id, given when the connection opens.
    public private(set) var id = SessionID(0)
    /// The connection; set when it opens, before the member joins its room.
    public private(set) var peer: WebSocketPeer!
    private let shared: Shared
    private var joining: Joining?
    private let scrollAllowance: ScrollAllowance?
    /// Highest `seq` delivered, so a member never sees a state twice or out of order.
    var lastSeq = 0
    /// Position in its local room's member list (for O(1) removal).
    var slot: Int32 = -1
    /// The room's version of the last document delivered (its welcome counts).
    var lastDocument: UInt32 = 0
    private var stage = Stage.new
    let role: Role
    /// The compressor window this receiver accepts (nil: send uncompressed).
    var windowBits: Int? { window.map(Int.init) }
    private var window: Int8?
    /// The hub counts it in `requestedRoom`.
    var isInRoom = false
    /// It left (disconnected), perhaps while its join waited.
    var left = false

    init(shared: Shared, room: String, role: Role, name: String?, key: String?, scrollBucket: TokenBucket?) {
        self.shared = shared
        requestedRoom = room
        self.role = role
        joining = Joining(key: key, name: name)
        scrollAllowance = scrollBucket.map(ScrollAllowance.init)
    }

    /// The display name it gave, while it joins (its room keeps it after that).
    var name: String? { joining?.name }

    /// The room it joined, once it has.
    var room: String? { isInRoom ? requestedRoom : nil }

    // MARK: WebSocketSession

    public func opened(_ peer: WebSocketPeer) {
        guard stage == .new, let joining else { return }
        self.peer = peer
        id = SessionID.make()
        if let deflate = peer.deflate {
            let bits = deflate.serverMaxWindowBits ?? 15
            window = bits >= 9 ? Int8(bits) : nil
        }
        stage = .joining
        let key = joining.key
        joining.key = nil  // the key is not kept longer than needed
        shared.hub.join(self, room: requestedRoom, role: role, key: key) { [self] result in
            guard stage == .joining else { return }
            let early = self.joining?.waiting ?? []
            self.joining = nil
            switch result {
            case .failure(let error):
                stage = .ended
                peer.send(text: ServerMessage.error(error))
                peer.close(code: .policyViolation, reason: error.message)
            case .success(let welcome):
                stage = .joined
                peer.send(text: ServerMessage.welcome(
                    room: requestedRoom, you: id.description, role: role, state: welcome.state, driver: welcome.driver?.description,
                    presence: welcome.presence, document: welcome.document))
                if let document = welcome.document { peer.send(text: ServerMessage.document(document)) }
                for text in early { text.withUnsafeBytes { received(text: $0, from: peer) } }
            }
        }
    }

    public func received(text: UnsafeRawBufferPointer, from peer: WebSocketPeer) {
        switch stage {
        case .joined: break
        case .joining:
            // Sent before the welcome, while the room is fetched from another node's store:
            // kept for after it (up to 16 messages, 64 KiB).
            if let joining, joining.waiting.count < 16 && joining.waiting.reduce(text.count, { $0 + $1.count }) <= 64 << 10 {
                joining.waiting.append(Array(text))
            } else {
                peer.send(text: ServerMessage.error(ProtocolError(.badMessage, "wait for welcome: more than 16 messages or 64 KiB came before it; this one was dropped")))
            }
            return
        case .new, .ended: return
        }
        let refusal: ProtocolError?
        do {
            let message = try ClientMessage.decode(text, limits: shared.limits)
            if case .scroll = message,
               scrollAllowance?.bucket.take(now: peer.channel.loop.now, rate: shared.scrollRate, burst: shared.scrollBurst) == false {
                shared.counters?.rateLimited.add(1, ordering: .relaxed)
                refusal = ProtocolError(.rateLimited, "more than \(shared.scrollRateText) scrolls per second; this one was dropped")
            } else {
                refusal = shared.hub.receive(message, from: self)
            }
        } catch {
            refusal = error
        }
        if let refusal { peer.send(text: ServerMessage.error(refusal)) }
    }

    public func received(binary: UnsafeRawBufferPointer, from peer: WebSocketPeer) {
        peer.send(text: ServerMessage.error(ProtocolError(.badMessage, "scrollsync.v1 messages are JSON text frames, not binary")))
    }

    public func closed(_ peer: WebSocketPeer, code: CloseCode) {
        let stage = self.stage
        self.stage = .ended
        joining = nil
        switch stage {
        case .joining: left = true
        case .joined: shared.hub.leave(self)
        case .new, .ended: break
        }
    }
}
