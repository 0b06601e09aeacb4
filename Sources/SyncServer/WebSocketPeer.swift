import HTTP1
import Bytes
import Hub
import TerminalFrames
import Transport
import WebSocketCore

/// One client connection as the server sees it: the HTTP upgrade, then the WebSocket
/// codec, on a transport channel (`WebSocketLink`, what sessions send through).
public final class WebSocketPeer: WebSocketLink, ChannelHandler {
    private let router: Router

    /// How long the peer has to answer our close frame before the socket is closed anyway:
    /// until the third tick of the loop's one-second timer, so 2 to 3 s.
    static let closeHandshakeTicks: UInt8 = 3

    init(channel: Channel, router: Router) {
        self.router = router
        let counters = router.counters
        counters.connectionsAccepted.add(1, ordering: .relaxed)
        let open = counters.connectionsOpen.add(1, ordering: .relaxed).newValue
        let now = channel.loop.now
        super.init(channel: channel, counters: counters, phase: .handshake(Handshake(
            parser: HTTPRequestParser(maxHeadBytes: router.configuration.limits.requestHeadBytes),
            deadline: now + UInt64(router.configuration.handshakeTimeoutSeconds) * 1_000_000_000,
            overLimit: router.connectionLimits.admit(address: channel.peerAddress, open: open))))
    }

    // MARK: ChannelHandler

    public func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {
        lastHeardMilliseconds = Self.milliseconds(channel.loop.now)
        pingOutstanding = false
        switch phase {
        case .handshake(let handshake):
            switch handshake.parser.parse(UnsafeRawBufferPointer(bytes)) {
            case .needMore: return
            case .failed(let response): refuse(response)
            case .complete(let request, let remainder):
                if let overLimit = handshake.overLimit {
                    refuse(overLimit, request: request)
                } else if !ServerHandshake.isUpgrade(request), let opening = router.openStream(request, for: self) {
                    switch opening {
                    case .answer(let response): refuse(response, request: request)
                    case .stream(let member, let size, let head):
                        phase = .stream(size)
                        session = member
                        channel.enqueue(head)
                        member.opened(self)
                    }
                } else if !ServerHandshake.isUpgrade(request), router.respond(to: request, from: channel.peerAddress, on: channel.loop, answer: { [self] response in
                    refuse(response, request: request)
                }) {  // an upgrade is told apart first: it makes no answer closure
                    if case .handshake = phase { phase = .done }  // the answer comes later: nothing more is read
                } else {
                    upgrade(request, remainder: remainder)
                }
            }
        case .open(let connection):
            if let session { receive(bytes, connection, session) }
        case .stream, .done:
            return  // a terminal reader has nothing to say
        }
    }

    public func channelTick(_ channel: Channel, now: UInt64) {
        switch phase {
        case .handshake(let handshake):
            if now >= handshake.deadline { refuse(.error(408, "request not completed in \(router.configuration.handshakeTimeoutSeconds) s")) }
        case .open(let connection):
            if connection.hasUnfinishedMessage {
                connection.tick(deadlineSeconds: router.configuration.messageTimeoutSeconds) { event in
                    if case .failed(let error) = event, closeCode == nil { closeCode = error.closeCode }
                }
                if connection.state == .closed {  // the message was not finished in time
                    counters.unfinishedMessagesClosed.add(1, ordering: .relaxed)
                    flushOutbound(connection)
                    return
                }
            }
            if closingTicks > 0 {
                if closingTicks < .max { closingTicks += 1 }
                if closingTicks > Self.closeHandshakeTicks { channel.close() }
                return
            }
            let idle = UInt64(router.configuration.idleTimeoutSeconds) * 1_000
            let silent = UInt64(Self.milliseconds(now) &- lastHeardMilliseconds)
            if silent >= 2 * idle {
                channel.abort()
            } else if silent >= idle && !pingOutstanding {
                pingOutstanding = true
                connection.sendPing()
                flushOutbound(connection)
            }
        case .stream:
            // A quiet room: a chunk that changes nothing on the screen, so that proxies keep the stream.
            let quiet = Self.milliseconds(now) &- lastHeardMilliseconds
            guard closingTicks == 0, quiet >= ScreenStream.keepAliveSeconds * 1_000, channel.queuedBytes == 0 else { return }
            lastHeardMilliseconds = Self.milliseconds(now)
            channel.enqueue(ScreenStream.keepAlive)
        case .done:
            break
        }
    }

    public func channelShutdownRequested(_ channel: Channel) {
        switch phase {
        case .open, .stream: close(code: .goingAway, reason: "server shutting down")
        case .handshake: refuse(.error(503, "server shutting down"))
        case .done: channel.close()
        }
    }

    /// A client that sent plain HTTP to the TLS port hears so in plain HTTP (as nginx does).
    public func channelFailed(_ channel: Channel, _ failure: TLSFailure) {
        guard failure == .notTLS else { return }
        counters.refused(status: 400)
        channel.sendUnencrypted(HTTPResponse.error(400, "this server speaks TLS: use wss:// (or https://)").bytes)
    }

    public func channelClosed(_ channel: Channel) {
        counters.connectionsOpen.subtract(1, ordering: .relaxed)
        router.connectionLimits.release(address: channel.peerAddress)
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
            router.tty?.closed(address: channel.peerAddress)
            self.session = nil
            session.closed(self, code: .normal)  // leaves its room while its size still says where it was
        }
        phase = .done
        session = nil
    }

    // MARK: Internals

    /// Answers with `response` and closes; refusals (status ≥ 400) are counted and logged
    /// with their reason, the path without its query (it may carry a key).
    private func refuse(_ response: HTTPResponse, request: HTTPRequest? = nil) {
        if response.status >= 400 {
            counters.refused(status: response.status)
            router.logger.info("refused", metadata: [
                "status": "\(response.status)",
                "reason": "\(String(decoding: response.body.last == 10 ? response.body.dropLast() : response.body[...], as: UTF8.self))",
                "address": "\(channel.peerAddress)",
                "path": "\(request.map { String($0.path.prefix(128)) } ?? "-")",
            ])
        }
        phase = .done
        let bytes = response.bytes
        if bytes.count > Self.largeAnswerBytes, router.acceptedSendBuffer != nil {
            // Accepted with a room's small buffer: a large answer (a recording) gets what
            // autotuning would give it, lest a distant client wait a round trip per 128 KiB.
            channel.setSendBuffer(SendBufferSize(bytes: 4 << 20, unsent: 0))
        }
        channel.enqueue(SharedBytes(bytes))
        channel.close()
    }

    /// HTTP answers above this get a send buffer of their own (see `refuse`).
    static let largeAnswerBytes = 64 << 10

    private func upgrade(_ request: HTTPRequest, remainder: [UInt8]) {
        switch router.route(request, for: self) {
        case .failure(let error):
            refuse(error.response, request: request)
        case .success(var admitted):
            let connection = WebSocketConnection(role: .server, limits: admitted.limits, deflate: admitted.deflate,
                                                 sharedDeflater: router.sharedDeflater(for: channel.loop))
            phase = .open(connection)
            session = admitted.session
            counters.connectionsUpgraded.add(1, ordering: .relaxed)
            counters.upgrades.add(1, ordering: .relaxed)
            if let size = admitted.sendBuffer { channel.setSendBuffer(size) }
            pendingResponse = admitted.takeResponse()  // its only reference: the welcome is framed into it in place
            admitted.session.opened(self)
            sendPendingResponse(connection)
            if !remainder.isEmpty {
                var bytes = remainder
                bytes.withUnsafeMutableBytes { receive($0, connection, admitted.session) }
            }
        }
    }

    private func receive(_ bytes: UnsafeMutableRawBufferPointer, _ connection: WebSocketConnection, _ session: any WebSocketSession) {
        counters.bytesIn.add(bytes.count, ordering: .relaxed)
        // Each message is counted before the session sees it, so a message's effects (a
        // broadcast another loop delivers at once) are never visible before its count.
        connection.receive(bytes, budget: router.messageBudget) { event in
            switch event {
            case .text(let payload):
                counters.messagesIn.add(1, ordering: .relaxed)
                session.received(text: payload, from: self)
            case .binary(let payload):
                counters.messagesIn.add(1, ordering: .relaxed)
                session.received(binary: payload, from: self)
            case .ping, .pong: break
            case .closed(let code, _): if closeCode == nil { closeCode = code }
            case .failed(let error):
                if closeCode == nil { closeCode = error.closeCode }
                if error == .overloaded { counters.unfinishedMessagesClosed.add(1, ordering: .relaxed) }
            }
        }
        flushOutbound(connection)
    }
}
