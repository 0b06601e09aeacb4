import HTTP1
import Bytes
import Transport
import WebSocketCore

/// One WebSocket connection on a transport channel (or a plain HTTP stream, `LinkStream`), and
/// what a session sends through it: messages, broadcast frames, the latest-state slot, pings,
/// the close handshake with its timeout, the idle limit, the end. The server's `WebSocketPeer`
/// is one (it adds the HTTP handshake and reads; a room member sends through it); a client's
/// `WebSocketClient` holds one once its own handshake is done. Its methods are final, so a
/// delivery calls them directly.
open class WebSocketLink {
    /// What a connection needs until its upgrade: held apart, so an open connection does
    /// not carry it.
    @usableFromInline package final class Handshake {
        package var parser: HTTPRequestParser
        package let deadline: UInt64
        /// The answer for a connection over a limit, given once its request has arrived.
        package let overLimit: HTTPResponse?

        package init(parser: HTTPRequestParser, deadline: UInt64, overLimit: HTTPResponse?) {
            self.parser = parser
            self.deadline = deadline
            self.overLimit = overLimit
        }
    }

    @usableFromInline package enum Phase {
        case handshake(Handshake)
        /// Upgraded; its session is `session`.
        case open(WebSocketConnection)
        /// A plain HTTP stream of frames (a terminal reader's); its session is `session`.
        case stream(any LinkStream)
        case done
    }

    // Stored large to small: one link per connection, so its size is per-connection memory.
    public let channel: Channel
    /// Where it counts connections, messages and bytes (a server's counters, or a client's own).
    package let counters: LinkCounters
    // Loop-thread only and never changed re-entrantly, like `pendingResponse`: no run-time
    // exclusivity check on every send.
    @exclusivity(unchecked) @usableFromInline package final var phase: Phase
    /// The session of an open connection, held apart from `phase`: every send copies the
    /// connection out of it, and that is one reference count, not two. Cleared when the
    /// connection closes (the session holds its link).
    @exclusivity(unchecked) private final var session: (any WebSocketSession)?
    /// The upgrade response while the session opens: it leaves in one chunk with the
    /// session's first messages, framed into it (one write, and no queue storage for an
    /// idle connection).
    @exclusivity(unchecked) @usableFromInline final var pendingResponse: [UInt8]?
    /// When the peer was last heard, in milliseconds of the loop's clock (wrapping: only
    /// differences under 49 days are read, and the idle limit is at most 2 days). A terminal
    /// reader says nothing: for it, when it was last sent a frame (`ScreenStream.keepAlive`).
    @exclusivity(unchecked) @usableFromInline final var lastHeardMilliseconds: UInt32
    /// The close code this connection ended with (sent or received), or 0.
    @exclusivity(unchecked) private final var closeCodeValue: UInt16 = 0
    /// 1 + the ticks since our close frame went out, or 0 (see `closeHandshakeTicks`).
    @exclusivity(unchecked) @usableFromInline final var closingTicks: UInt8 = 0
    @exclusivity(unchecked) private final var pingOutstanding = false

    private final var closeCode: CloseCode? {
        get { closeCodeValue == 0 ? nil : CloseCode(closeCodeValue) }
        set { closeCodeValue = newValue?.rawValue ?? 0 }
    }

    @inlinable static func milliseconds(_ nanoseconds: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: nanoseconds / 1_000_000) }

    package init(channel: Channel, counters: LinkCounters, phase: Phase) {
        self.channel = channel
        self.counters = counters
        self.phase = phase
        lastHeardMilliseconds = Self.milliseconds(channel.loop.now)
    }

    // MARK: For sessions

    /// Queues a text message. False when the connection is closing.
    @discardableResult
    public final func send(text: UnsafeRawBufferPointer) -> Bool {
        guard case .open(let connection) = phase else { return false }
        if pendingResponse != nil, let length = connection.appendFrame(text: text, to: &pendingResponse!) {  // the welcome: after the 101, in its buffer
            counters.messagesOut.add(1, ordering: .relaxed)
            counters.bytesOut.add(length, ordering: .relaxed)
            return true
        }
        defer { flushOutbound(connection) }
        return connection.send(text: text)
    }

    @discardableResult
    public final func send(text: String) -> Bool {
        var text = text
        return text.withUTF8 { send(text: UnsafeRawBufferPointer($0)) }
    }

    @discardableResult
    package final func send(text bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(text: $0) }
    }

    @discardableResult
    public final func send(binary: UnsafeRawBufferPointer) -> Bool {
        guard case .open(let connection) = phase else { return false }
        defer { flushOutbound(connection) }
        return connection.send(binary: binary)
    }

    // The sends of a broadcast are inlinable: a room (the hub, another module) delivers through
    // them to every member, and a call per delivery costs some 13 instructions (callgrind,
    // `Scripts/bench-delivery-instructions`). The fields they read are loop-confined as above.

    /// Queues a frame encoded once for many receivers (a broadcast).
    @inlinable @discardableResult
    public final func send(frame: SharedBytes) -> SendStatus {
        guard readyForFrames() else { return .dropped }
        return channel.enqueue(frame)
    }

    /// Queues a broadcast frame that a newer one may replace while it waits (conflation).
    /// Returns true when it replaced an older one.
    @inlinable @discardableResult
    public final func sendLatest(frame: SharedBytes) -> Bool {
        guard readyForFrames() else { return false }
        return channel.enqueueLatest(frame)
    }

    /// The plain HTTP stream it carries (a terminal reader's), or nil for a WebSocket (asked
    /// twice a join: inlined, as a call cost some 35 instructions a join).
    @inlinable package final var stream: (any LinkStream)? {
        if case .stream(let stream) = phase { stream } else { nil }
    }

    /// Queues a stream's newest frame (one HTTP chunk) in its conflation slot.
    /// Returns true when it replaced an older one.
    @inlinable package final func sendStream(frame: SharedBytes) -> Bool {
        guard case .stream = phase, closingTicks == 0 else { return false }
        lastHeardMilliseconds = Self.milliseconds(channel.loop.now)
        return channel.enqueueLatest(frame)
    }

    /// Whether the connection is open for broadcast frames, after its pending upgrade
    /// response (if any) is queued. The connection is looked at here only, so that a send does
    /// not hold it (a reference count) across the enqueue.
    @inlinable @inline(__always)
    final func readyForFrames() -> Bool {
        guard case .open(let connection) = phase, connection.isOpen else { return false }
        if pendingResponse != nil { sendPendingResponse(connection) }
        return true
    }

    /// Whether the connection is open for messages (upgraded, and not closing).
    package final var isOpen: Bool {
        if case .open(let connection) = phase { connection.isOpen } else { false }
    }

    /// Sends a ping (payload at most 125 bytes); its pong goes to the session.
    package final func ping(_ payload: [UInt8] = []) {
        guard case .open(let connection) = phase else { return }
        connection.sendPing(payload)
        flushOutbound(connection)
    }

    /// Starts the close handshake with `code` and `reason` (a stream: its end, with the reason).
    public final func close(code: CloseCode = .normal, reason: String = "") {
        if case .stream(let stream) = phase, closingTicks == 0 {
            closingTicks = 1
            channel.enqueue(stream.end(reason: reason))
            channel.close()
        }
        guard case .open(let connection) = phase else { return }
        if closeCode == nil { closeCode = code }
        connection.close(code: code, reason: reason)
        if closingTicks == 0 { closingTicks = 1 }
        flushOutbound(connection)
    }

    /// The agreed permessage-deflate parameters, if any.
    public final var deflate: PerMessageDeflate? {
        if case .open(let connection) = phase { connection.deflate } else { nil }
    }

    // MARK: For the connection's handler

    // What the handler (`WebSocketPeer`, in another module) does to the link's state is done
    // here: fields reached from another module are checked for exclusivity at run time on
    // every access, which the loop-confined fields above are declared not to need.

    /// How long the peer has to answer our close frame before the socket is closed anyway:
    /// until the third tick of the loop's one-second timer, so 2 to 3 s. A server then closes
    /// (what it queued still goes out); a client aborts, as the server should have closed first
    /// (RFC 6455 §7.1.1).
    package static let closeHandshakeTicks: UInt8 = 3

    /// Bytes read: an open connection's messages go to its session (`budget`: what unfinished
    /// messages may hold across connections). Returns the handshake under way, if any, for the
    /// handler to read; a stream's reader has nothing to say.
    package final func read(_ bytes: UnsafeMutableRawBufferPointer, budget: MessageBudget?) -> Handshake? {
        lastHeardMilliseconds = Self.milliseconds(channel.loop.now)
        pingOutstanding = false
        switch phase {
        case .handshake(let handshake): return handshake
        case .open(let connection): if let session { receive(bytes, connection, session, budget: budget) }
        case .stream, .done: break
        }
        return nil
    }

    /// The loop's once-a-second tick: an unfinished message past `messageTimeoutSeconds`, the
    /// close handshake's time, a ping after `idleSeconds` of silence (and the end after twice
    /// that), a stream's keep-alive. A limit of 0 is none. Returns the handshake under way, if any.
    package final func tick(now: UInt64, idleSeconds: Int, messageTimeoutSeconds: Int) -> Handshake? {
        switch phase {
        case .handshake(let handshake):
            return handshake
        case .open(let connection):
            if messageTimeoutSeconds > 0 && connection.hasUnfinishedMessage {
                connection.tick(deadlineSeconds: messageTimeoutSeconds) { event in
                    guard case .failed(let error) = event else { return }
                    if closeCode == nil { closeCode = error.closeCode }
                    session?.failed(error, on: self)
                }
                if connection.state == .closed {  // the message was not finished in time
                    counters.unfinishedMessagesClosed.add(1, ordering: .relaxed)
                    flushOutbound(connection)
                    return nil
                }
            }
            if closingTicks > 0 {
                if closingTicks < .max { closingTicks += 1 }
                if closingTicks > Self.closeHandshakeTicks {
                    if connection.role == .server { channel.close() } else { channel.abort() }
                }
                return nil
            }
            guard idleSeconds > 0 else { return nil }
            let idle = UInt64(idleSeconds) * 1_000
            let silent = UInt64(Self.milliseconds(now) &- lastHeardMilliseconds)
            if silent >= 2 * idle {
                channel.abort()
            } else if silent >= idle && !pingOutstanding {
                pingOutstanding = true
                connection.sendPing()
                flushOutbound(connection)
            }
        case .stream(let stream):
            // Quiet: a chunk that changes nothing for its reader, so that proxies keep the stream.
            let quiet = Self.milliseconds(now) &- lastHeardMilliseconds
            guard closingTicks == 0, quiet >= stream.keepAliveSeconds * 1_000, channel.queuedBytes == 0 else { return nil }
            lastHeardMilliseconds = Self.milliseconds(now)
            channel.enqueue(stream.keepAlive)
        case .done:
            break
        }
        return nil
    }

    /// The upgrade: from now on the connection speaks WebSocket to `session`. `response` (the
    /// 101) leaves with what the session sends as it opens; `remainder` is what the client sent
    /// after its request.
    package final func upgraded(_ connection: WebSocketConnection, session: any WebSocketSession, response: consuming [UInt8],
                                remainder: [UInt8], budget: MessageBudget?) {
        phase = .open(connection)
        self.session = session
        counters.connectionsUpgraded.add(1, ordering: .relaxed)
        counters.upgrades.add(1, ordering: .relaxed)
        // Its only reference (consumed, not borrowed: a caller's copy would make the welcome's
        // append copy it whole): the welcome is framed into it in place.
        pendingResponse = consume response
        session.opened(self)
        sendPendingResponse(connection)
        if !remainder.isEmpty {
            var bytes = remainder
            bytes.withUnsafeMutableBytes { receive($0, connection, session, budget: budget) }
        }
    }

    /// A client's connection, upgraded by its own handshake: from now on it speaks WebSocket to
    /// `session` (what the server sent after its answer is then `read`).
    package final func opened(_ connection: WebSocketConnection, session: any WebSocketSession) {
        phase = .open(connection)
        self.session = session
        counters.connectionsUpgraded.add(1, ordering: .relaxed)
        counters.upgrades.add(1, ordering: .relaxed)
        session.opened(self)
    }

    /// A plain HTTP stream: `head` goes out, then its session's frames (`sendStream`).
    package final func streaming(_ session: any WebSocketSession, stream: any LinkStream, head: SharedBytes) {
        phase = .stream(stream)
        self.session = session
        channel.enqueue(head)
        session.opened(self)
    }

    /// The channel closed: the session hears it (a stream's after `streamEnded`, while its
    /// stream still says what it was), and the link is done.
    package final func ended(streamEnded: () -> Void) {
        if case .open(let connection) = phase, let session {
            counters.connectionsUpgraded.subtract(1, ordering: .relaxed)
            let code: CloseCode = connection.state == .closed ? closeCode ?? .normal : .abnormal
            counters.closed(code: code)
            connection.abandon()
            phase = .done
            self.session = nil
            session.closed(self, code: code)
        }
        if case .stream = phase, let session {
            streamEnded()
            self.session = nil
            session.closed(self, code: .normal)
        }
        phase = .done
        session = nil
    }

    private final func receive(_ bytes: UnsafeMutableRawBufferPointer, _ connection: WebSocketConnection, _ session: any WebSocketSession,
                               budget: MessageBudget?) {
        counters.bytesIn.add(bytes.count, ordering: .relaxed)
        // Each message is counted before the session sees it, so a message's effects (a
        // broadcast another loop delivers at once) are never visible before its count.
        connection.receive(bytes, budget: budget) { event in
            switch event {
            case .text(let payload):
                counters.messagesIn.add(1, ordering: .relaxed)
                session.received(text: payload, from: self)
            case .binary(let payload):
                counters.messagesIn.add(1, ordering: .relaxed)
                session.received(binary: payload, from: self)
            case .ping: break
            case .pong(let payload): session.received(pong: payload, from: self)
            case .closed(let code, let reason):
                if closeCode == nil { closeCode = code }
                session.received(close: code, reason: reason, from: self)
            case .failed(let error):
                if closeCode == nil { closeCode = error.closeCode }
                if error == .overloaded { counters.unfinishedMessagesClosed.add(1, ordering: .relaxed) }
                session.failed(error, on: self)
            }
        }
        flushOutbound(connection)
    }

    // MARK: Writing

    /// Queues the upgrade response with whatever the session sent while it opened.
    @usableFromInline final func sendPendingResponse(_ connection: WebSocketConnection) {
        guard let response = pendingResponse else { return }
        pendingResponse = nil
        let frameBytes = connection.outboundByteCount
        var frames = 0
        channel.enqueue(SharedBytes(count: response.count + frameBytes) { destination in
            var position = response.withUnsafeBytes { destination.copyMemory(from: $0); return $0.count }
            connection.drainOutbound { frame in
                UnsafeMutableRawBufferPointer(rebasing: destination[position...]).copyMemory(from: frame.buffer)
                position += frame.count
                frames += 1
            }
        })
        if frames > 0 {
            counters.messagesOut.add(frames, ordering: .relaxed)
            counters.bytesOut.add(frameBytes, ordering: .relaxed)
        }
        if connection.state == .closed { channel.close() }
    }

    private final func flushOutbound(_ connection: WebSocketConnection) {
        guard pendingResponse == nil else { return }  // leaves with the upgrade response
        var frames = 0
        var bytes = 0
        connection.drainOutbound { frame in
            frames += 1
            bytes += frame.count
            channel.enqueue(frame)
        }
        if frames > 0 {
            counters.messagesOut.add(frames, ordering: .relaxed)
            counters.bytesOut.add(bytes, ordering: .relaxed)
        }
        if connection.state == .closed { channel.close() }
    }
}
