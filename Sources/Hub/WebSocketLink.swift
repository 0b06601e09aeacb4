import HTTP1
import Bytes
import TerminalFrames
import Transport
import WebSocketCore

/// One client connection as the rooms see it: a WebSocket (or a terminal reader's stream) on a
/// transport channel, and what a session sends through it: messages, broadcast frames, the
/// latest-state slot, the close. The server's `WebSocketPeer` is one: it adds the HTTP
/// handshake and reads (its router lives above the rooms). Its methods are final, so a
/// delivery calls them directly.
open class WebSocketLink {
    /// What a connection needs until its upgrade: held apart, so an open connection does
    /// not carry it.
    package final class Handshake {
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

    package enum Phase {
        case handshake(Handshake)
        /// Upgraded; its session is `session`.
        case open(WebSocketConnection)
        /// A terminal reader's stream of frames at this size (`TTYEndpoint`); its session is `session`.
        case stream(ScreenSize)
        case done
    }

    // Stored large to small: one link per connection, so its size is per-connection memory.
    public let channel: Channel
    /// The server's counters (messages and bytes out are counted here).
    package let counters: ServerCounters
    // Loop-thread only and never changed re-entrantly, like `pendingResponse`: no run-time
    // exclusivity check on every send.
    @exclusivity(unchecked) package final var phase: Phase
    /// The session of an open connection, held apart from `phase`: every send copies the
    /// connection out of it, and that is one reference count, not two. Cleared when the
    /// connection closes (the session holds its link).
    @exclusivity(unchecked) package final var session: (any WebSocketSession)?
    /// The upgrade response while the session opens: it leaves in one chunk with the
    /// session's first messages, framed into it (one write, and no queue storage for an
    /// idle connection).
    @exclusivity(unchecked) package final var pendingResponse: [UInt8]?
    /// When the peer was last heard, in milliseconds of the loop's clock (wrapping: only
    /// differences under 49 days are read, and the idle limit is at most 2 days). A terminal
    /// reader says nothing: for it, when it was last sent a frame (`ScreenStream.keepAlive`).
    @exclusivity(unchecked) package final var lastHeardMilliseconds: UInt32
    /// The close code this connection ended with (sent or received), or 0.
    private final var closeCodeValue: UInt16 = 0
    /// 1 + the ticks since our close frame went out, or 0 (see `closeHandshakeTicks`).
    package final var closingTicks: UInt8 = 0
    package final var pingOutstanding = false

    package final var closeCode: CloseCode? {
        get { closeCodeValue == 0 ? nil : CloseCode(closeCodeValue) }
        set { closeCodeValue = newValue?.rawValue ?? 0 }
    }

    package static func milliseconds(_ nanoseconds: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: nanoseconds / 1_000_000) }

    package init(channel: Channel, counters: ServerCounters, phase: Phase) {
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

    /// Queues a frame encoded once for many receivers (a broadcast).
    @discardableResult
    public final func send(frame: SharedBytes) -> SendStatus {
        guard readyForFrames() else { return .dropped }
        return channel.enqueue(frame)
    }

    /// Queues a broadcast frame that a newer one may replace while it waits (conflation).
    /// Returns true when it replaced an older one.
    @discardableResult
    public final func sendLatest(frame: SharedBytes) -> Bool {
        guard readyForFrames() else { return false }
        return channel.enqueueLatest(frame)
    }

    /// A terminal reader's size (as its room renders it, once it is in), or nil for a WebSocket.
    package final var screenSize: ScreenSize? {
        get { if case .stream(let size) = phase { size } else { nil } }
        set { if case .stream = phase, let newValue { phase = .stream(newValue) } }
    }

    /// Queues a terminal reader's newest frame (one HTTP chunk) in its conflation slot.
    /// Returns true when it replaced an older one.
    package final func sendScreen(frame: SharedBytes) -> Bool {
        guard case .stream = phase, closingTicks == 0 else { return false }
        lastHeardMilliseconds = Self.milliseconds(channel.loop.now)
        return channel.enqueueLatest(frame)
    }

    /// Whether the connection is open for broadcast frames, after its pending upgrade
    /// response (if any) is queued. The connection is looked at here only, so that a send does
    /// not hold it (a reference count) across the enqueue.
    @inline(__always)
    private final func readyForFrames() -> Bool {
        guard case .open(let connection) = phase, connection.isOpen else { return false }
        if pendingResponse != nil { sendPendingResponse(connection) }
        return true
    }

    /// Starts the close handshake with `code` and `reason`.
    public final func close(code: CloseCode = .normal, reason: String = "") {
        if case .stream = phase, closingTicks == 0 {  // a terminal reader: the reason below the view, then the end
            closingTicks = 1
            channel.enqueue(ScreenStream.end(reason: reason))
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

    // MARK: Writing

    /// Queues the upgrade response with whatever the session sent while it opened.
    package final func sendPendingResponse(_ connection: WebSocketConnection) {
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

    package final func flushOutbound(_ connection: WebSocketConnection) {
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

/// The application side of one WebSocket connection. Calls come on its event loop.
public protocol WebSocketSession: AnyObject {
    func opened(_ peer: WebSocketLink)
    func received(text: UnsafeRawBufferPointer, from peer: WebSocketLink)
    func received(binary: UnsafeRawBufferPointer, from peer: WebSocketLink)
    /// The connection ended: closed by either side or dropped (`.abnormal`).
    func closed(_ peer: WebSocketLink, code: CloseCode)
}

extension WebSocketSession {
    public func opened(_ peer: WebSocketLink) {}
    public func received(binary: UnsafeRawBufferPointer, from peer: WebSocketLink) {}
}
