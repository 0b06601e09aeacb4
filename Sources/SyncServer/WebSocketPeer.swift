import HTTP1
import Bytes
import Hub
import TerminalFrames
import Transport
import WebSocketChannel
import WebSocketCore

/// One client connection as the server sees it: the HTTP upgrade, then the WebSocket
/// codec, on a transport channel (`WebSocketLink`, what sessions send through).
public final class WebSocketPeer: WebSocketLink, ChannelHandler {
    private let router: Router

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
        guard let handshake = read(bytes, budget: router.messageBudget) else { return }
        switch handshake.parser.parse(UnsafeRawBufferPointer(bytes)) {
        case .needMore: return
        case .failed(let response): refuse(response)
        case .complete(let request, let remainder):
            // Told apart once (its header checks are some 300 instructions): an upgrade makes
            // no answer closure.
            let isUpgrade = ServerHandshake.isUpgrade(request)
            if let overLimit = handshake.overLimit {
                refuse(overLimit, request: request)
            } else if !isUpgrade, let opening = router.openStream(request, for: self) {
                switch opening {
                case .answer(let response): refuse(response, request: request)
                case .stream(let member, let size, let head): streaming(member, stream: ReaderStream(size: size), head: head)
                }
            } else if !isUpgrade, router.respond(to: request, from: channel.peerAddress, on: channel.loop, answer: { [self] response in
                refuse(response, request: request)
            }) {
                if case .handshake = phase { phase = .done }  // the answer comes later: nothing more is read
            } else {
                upgrade(request, remainder: remainder)
            }
        }
    }

    public func channelTick(_ channel: Channel, now: UInt64) {
        let configuration = router.configuration
        guard let handshake = tick(now: now, idleSeconds: configuration.idleTimeoutSeconds,
                                   messageTimeoutSeconds: configuration.messageTimeoutSeconds) else { return }
        if now >= handshake.deadline { refuse(.error(408, "request not completed in \(configuration.handshakeTimeoutSeconds) s")) }
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
        router.counters.refused(status: 400)
        channel.sendUnencrypted(HTTPResponse.error(400, "this server speaks TLS: use wss:// (or https://)").bytes)
    }

    public func channelClosed(_ channel: Channel) {
        router.counters.connectionsOpen.subtract(1, ordering: .relaxed)
        router.connectionLimits.release(address: channel.peerAddress)
        ended { router.tty?.closed(address: channel.peerAddress) }
    }

    // MARK: Internals

    /// Answers with `response` and closes; refusals (status ≥ 400) are counted and logged
    /// with their reason, the path without its query (it may carry a key).
    private func refuse(_ response: HTTPResponse, request: HTTPRequest? = nil) {
        if response.status >= 400 {
            router.counters.refused(status: response.status)
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
            if let size = admitted.sendBuffer { channel.setSendBuffer(size) }
            upgraded(connection, session: admitted.session, response: admitted.takeResponse(), remainder: remainder, budget: router.messageBudget)
        }
    }
}
