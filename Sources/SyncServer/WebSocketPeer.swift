import Bytes
import Transport
import WebSocketCore

/// One client connection as the server sees it: the HTTP upgrade, then the WebSocket
/// codec, on a transport channel. Sessions send through it.
public final class WebSocketPeer: ChannelHandler {
    private enum Phase {
        case handshake(HTTPRequestParser, deadline: UInt64)
        case open(WebSocketConnection, any WebSocketSession)
        case done
    }

    public let channel: Channel
    private let router: Router
    private let counters: ServerCounters
    private var phase: Phase
    private var lastHeard: UInt64
    private var closingDeadline: UInt64?
    private var pingOutstanding = false

    init(channel: Channel, router: Router, counters: ServerCounters) {
        self.channel = channel
        self.router = router
        self.counters = counters
        counters.connectionsAccepted.add(1, ordering: .relaxed)
        counters.connectionsOpen.add(1, ordering: .relaxed)
        let now = channel.loop.now
        lastHeard = now
        phase = .handshake(
            HTTPRequestParser(maxHeadBytes: router.configuration.maxRequestHeadBytes),
            deadline: now + UInt64(router.configuration.handshakeTimeoutSeconds) * 1_000_000_000)
    }

    // MARK: For sessions

    /// Queues a text message. False when the connection is closing.
    @discardableResult
    public func send(text: UnsafeRawBufferPointer) -> Bool {
        guard case .open(let connection, _) = phase else { return false }
        defer { flushOutbound(connection) }
        return connection.send(text: text)
    }

    @discardableResult
    public func send(text: String) -> Bool {
        var text = text
        return text.withUTF8 { send(text: UnsafeRawBufferPointer($0)) }
    }

    @discardableResult
    public func send(binary: UnsafeRawBufferPointer) -> Bool {
        guard case .open(let connection, _) = phase else { return false }
        defer { flushOutbound(connection) }
        return connection.send(binary: binary)
    }

    /// Queues a frame encoded once for many receivers (a broadcast).
    @discardableResult
    public func send(frame: SharedBytes) -> SendStatus {
        guard case .open(let connection, _) = phase, connection.isOpen else { return .dropped }
        return channel.enqueue(frame)
    }

    /// Queues a broadcast frame that a newer one may replace while it waits (conflation).
    /// Returns true when it replaced an older one.
    @discardableResult
    public func sendLatest(frame: SharedBytes) -> Bool {
        guard case .open(let connection, _) = phase, connection.isOpen else { return false }
        return channel.enqueueLatest(frame)
    }

    /// Starts the close handshake with `code` and `reason`.
    public func close(code: CloseCode = .normal, reason: String = "") {
        guard case .open(let connection, _) = phase else { return }
        connection.close(code: code, reason: reason)
        closingDeadline = channel.loop.now + 2_000_000_000
        flushOutbound(connection)
    }

    /// The agreed permessage-deflate parameters, if any.
    public var deflate: PerMessageDeflate? {
        if case .open(let connection, _) = phase { connection.deflate } else { nil }
    }

    // MARK: ChannelHandler

    public func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {
        lastHeard = channel.loop.now
        pingOutstanding = false
        switch phase {
        case .handshake(var parser, let deadline):
            let result = parser.parse(UnsafeRawBufferPointer(bytes))
            phase = .handshake(parser, deadline: deadline)
            switch result {
            case .needMore: return
            case .failed(let response): refuse(response)
            case .complete(let request, let remainder):
                if let response = router.respond(to: request) { refuse(response) } else { upgrade(request, remainder: remainder) }
            }
        case .open(let connection, let session):
            receive(bytes, connection, session)
        case .done:
            return
        }
    }

    public func channelTick(_ channel: Channel, now: UInt64) {
        switch phase {
        case .handshake(_, let deadline):
            if now >= deadline { refuse(.error(408, "request not completed in \(router.configuration.handshakeTimeoutSeconds) s")) }
        case .open(let connection, _):
            if let closingDeadline, now >= closingDeadline {
                channel.close()
                return
            }
            let idle = UInt64(router.configuration.idleTimeoutSeconds) * 1_000_000_000
            if now - lastHeard >= 2 * idle {
                channel.abort()
            } else if now - lastHeard >= idle && !pingOutstanding {
                pingOutstanding = true
                connection.sendPing()
                flushOutbound(connection)
            }
        case .done:
            break
        }
    }

    public func channelShutdownRequested(_ channel: Channel) {
        switch phase {
        case .open: close(code: .goingAway, reason: "server shutting down")
        case .handshake: refuse(.error(503, "server shutting down"))
        case .done: channel.close()
        }
    }

    public func channelClosed(_ channel: Channel) {
        counters.connectionsOpen.subtract(1, ordering: .relaxed)
        if case .open(let connection, let session) = phase {
            let code: CloseCode = connection.state == .closed ? .normal : .abnormal
            connection.abandon()
            phase = .done
            session.closed(self, code: code)
        }
        phase = .done
    }

    // MARK: Internals

    private func refuse(_ response: HTTPResponse) {
        if response.status >= 400 { counters.upgradesRefused.add(1, ordering: .relaxed) }
        phase = .done
        channel.enqueue(SharedBytes(response.bytes))
        channel.close()
    }

    private func upgrade(_ request: HTTPRequest, remainder: [UInt8]) {
        switch router.route(request, on: channel.loop) {
        case .failure(let error):
            refuse(error.response)
        case .success(let admitted):
            let connection = WebSocketConnection(role: .server, limits: admitted.limits, deflate: admitted.deflate,
                                                 sharedDeflater: router.sharedDeflater(for: channel.loop))
            phase = .open(connection, admitted.session)
            if let size = admitted.socketSendBuffer { channel.setSendBufferSize(size) }
            channel.enqueue(SharedBytes(admitted.response.bytes))
            admitted.session.opened(self)
            if !remainder.isEmpty {
                var bytes = remainder
                bytes.withUnsafeMutableBytes { receive($0, connection, admitted.session) }
            }
        }
    }

    private func receive(_ bytes: UnsafeMutableRawBufferPointer, _ connection: WebSocketConnection, _ session: any WebSocketSession) {
        connection.receive(bytes) { event in
            switch event {
            case .text(let payload): session.received(text: payload, from: self)
            case .binary(let payload): session.received(binary: payload, from: self)
            case .ping, .pong: break
            case .closed, .failed: break
            }
        }
        flushOutbound(connection)
    }

    private func flushOutbound(_ connection: WebSocketConnection) {
        connection.drainOutbound { channel.enqueue($0) }
        if connection.state == .closed { channel.close() }
    }
}
