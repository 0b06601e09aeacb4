import HTTP1
import Bytes
import Transport
import WebSocketChannel
import WebSocketCore

/// The client side of one WebSocket connection on a transport channel: it sends the
/// upgrade, checks the answer (RFC 6455 §4.1), then speaks frames with masking through a
/// `WebSocketLink`, as the server does. All calls must come on the channel's loop.
public final class WebSocketClient: ChannelHandler {
    public enum Event {
        case open(ClientHandshake.Agreement)
        /// A text message; the buffer is valid only during the call.
        case text(UnsafeRawBufferPointer)
        case binary(UnsafeRawBufferPointer)
        /// The answer to a `ping(_:)`, with its payload.
        case pong(UnsafeRawBufferPointer)
        /// The connection ended. `error` says why when it was not a clean close.
        case closed(code: CloseCode, reason: String, error: String?)
    }

    private enum Phase {
        case connecting
        case handshake([UInt8])
        case open(WebSocketLink)
        case done
    }

    public let url: WebSocketURL
    public private(set) var channel: Channel?
    private let handshake: ClientHandshake
    private let limits: WebSocketConnection.Limits
    private let onEvent: (WebSocketClient, Event) -> Void
    private var phase = Phase.connecting
    private var deadline: UInt64 = 0
    private var failure: String?
    /// Why the connection cannot work however often it is tried (the certificate is not
    /// trusted; the server speaks TLS to ws:// or plain text to wss://), or nil.
    public private(set) var permanentFailure: String?

    /// The server's answer when it refused the upgrade: its status, what its body said, and
    /// its `Retry-After` in seconds.
    public private(set) var refusal: (status: Int, message: String, retryAfter: Int?)?
    /// The reason in the server's close frame.
    private var closeReason = ""

    /// Connects on `loop` (call on its thread); events arrive on the same thread, never
    /// before this call has returned (a connection that fails at once is told on the next turn).
    /// - Parameters:
    ///   - address: `url`'s host, resolved beforehand (lookups block; do them off the loop).
    ///   - tls: the client TLS context, required for `wss://`.
    @discardableResult
    public static func connect(
        _ url: WebSocketURL, address: SocketAddress, on loop: EventLoop, tls: TLSContext?, protocols: [String] = [],
        deflate: Bool = false, limits: WebSocketConnection.Limits = .init(), receiveBuffer: Int? = nil, source: SocketAddress? = nil,
        onEvent: @escaping (WebSocketClient, Event) -> Void
    ) -> WebSocketClient {
        let client = WebSocketClient(url: url, protocols: protocols, deflate: deflate, limits: limits, onEvent: onEvent)
        client.deadline = loop.now + 10_000_000_000
        do {
            client.channel = try loop.connect(to: address, from: source, tls: url.secure ? tls : nil, serverName: url.host, receiveBuffer: receiveBuffer) { _ in client }
        } catch {
            // Told on the loop's next turn, not inside this call: the caller has not yet
            // stored the client it is about to be told about.
            let message = "\(error)"
            loop.schedule(after: 0) { client.finish(code: .abnormal, error: message) }
        }
        return client
    }

    private init(url: WebSocketURL, protocols: [String], deflate: Bool, limits: WebSocketConnection.Limits,
                 onEvent: @escaping (WebSocketClient, Event) -> Void) {
        self.url = url
        self.limits = limits
        self.onEvent = onEvent
        handshake = ClientHandshake(host: url.hostHeader, target: url.target, protocols: protocols, deflate: deflate ? PerMessageDeflate() : nil)
    }

    public var isOpen: Bool { if case .open(let link) = phase { link.isOpen } else { false } }

    /// Queues a text message; false when the connection is not open.
    @discardableResult
    public func send(text: UnsafeRawBufferPointer) -> Bool {
        guard case .open(let link) = phase else { return false }
        return link.send(text: text)
    }

    @discardableResult
    public func send(text: [UInt8]) -> Bool { text.withUnsafeBytes { send(text: $0) } }

    /// Starts the close handshake; the server closes the TCP connection after its reply.
    public func close(code: CloseCode = .normal, reason: String = "") {
        switch phase {
        case .open(let link):
            link.close(code: code, reason: reason)
        case .connecting, .handshake:
            channel?.abort()
        case .done:
            break
        }
    }

    // MARK: ChannelHandler

    public func channelActive(_ channel: Channel) {
        phase = .handshake([])
        channel.enqueue(SharedBytes(handshake.requestBytes))
    }

    public func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {
        switch phase {
        case .handshake(var head):
            let searched = max(0, head.count - 3)  // a CRLF CRLF already looked for cannot start before this
            head.append(contentsOf: bytes)
            // A TLS record (handshake 0x16 or alert 0x15, version 3.x) where HTTP should be.
            if head.count >= 3, head[0] == 0x15 || head[0] == 0x16, head[1] == 3 {
                permanentFailure = "not a plain WebSocket server (it answered with TLS; use wss:// for it)"
                return fail(permanentFailure!)
            }
            guard let end = HTTPResponseHead.end(in: head, from: searched) else {
                if head.count > 16 << 10 { fail("response head larger than 16 KiB") } else { phase = .handshake(head) }
                return
            }
            guard let response = HTTPResponseHead.parse(Array(head[..<end])) else { return fail("malformed HTTP response") }
            switch handshake.validate(response) {
            case .failure(let error):
                if case .refused(let status, _) = error {
                    // The body (a line saying what was wrong) usually came in the same read.
                    var message = response.message(in: head[(end + 4)...])
                    if (300..<400).contains(status) {
                        let location = response.value("Location").map { String($0.prefix(200)) } ?? "no Location given"
                        message = "the server redirects to \(location); WebSocket clients do not follow redirects: use the URL it names"
                    }
                    refusal = (status, message, response.value("Retry-After").flatMap { Int($0) })
                    return fail("handshake refused: \(error)" + (message.isEmpty ? "" : ": \(message)"))
                }
                // A 101 that breaks RFC 6455 (a wrong Sec-WebSocket-Accept, an extension or
                // subprotocol never offered) comes from something that is not a WebSocket
                // server this client can talk to: retrying cannot change it.
                permanentFailure = "not a WebSocket server this client can talk to (\(error))"
                fail(permanentFailure!)
            case .success(let agreement):
                let link = WebSocketLink(channel: channel, counters: LinkCounters(), phase: .done)
                phase = .open(link)
                link.opened(WebSocketConnection(role: .client, limits: limits, deflate: agreement.deflate), session: Listener(self))
                onEvent(self, .open(agreement))
                var rest = Array(head[(end + 4)...])
                if !rest.isEmpty { rest.withUnsafeMutableBytes { _ = link.read($0, budget: nil) } }
            }
        case .open(let link):
            _ = link.read(bytes, budget: nil)
        case .connecting, .done:
            break
        }
    }

    public func channelTick(_ channel: Channel, now: UInt64) {
        switch phase {
        case .connecting, .handshake:
            if now >= deadline { fail("no handshake within 10 s") }
        case .open(let link):
            _ = link.tick(now: now, idleSeconds: 0, messageTimeoutSeconds: 0)  // our close's timeout only
        case .done:
            break
        }
    }

    public func channelFailed(_ channel: Channel, _ failure: TLSFailure) {
        if failure.isPermanent { permanentFailure = failure.description }
        if self.failure == nil { self.failure = failure.description }
    }

    public func channelClosed(_ channel: Channel) {
        if let error = channel.connectError, failure == nil {
            failure = "connect to \(url.hostHeader) failed: \(SystemError(call: "connect", errno: error).description)"
        }
        if case .open(let link) = phase {
            link.ended {}  // its session (`Listener`) finishes with the close code
        } else {
            finish(code: .abnormal, error: failure)
        }
    }

    /// Sends a ping (payload at most 125 bytes); its pong comes as `.pong`.
    public func ping(_ payload: [UInt8]) {
        guard case .open(let link) = phase else { return }
        link.ping(payload)
    }

    // MARK: Internals

    private func fail(_ reason: String) {
        failure = reason
        channel?.abort()
    }

    private func finish(code: CloseCode, error: String?) {
        if case .done = phase { return }
        phase = .done
        onEvent(self, .closed(code: code, reason: closeReason, error: error))
    }

    /// What the link says, as the client's events (apart from the client, so that a session's
    /// methods are not its API).
    private final class Listener: WebSocketSession {
        unowned let client: WebSocketClient

        init(_ client: WebSocketClient) { self.client = client }

        func received(text: UnsafeRawBufferPointer, from peer: WebSocketLink) { client.onEvent(client, .text(text)) }
        func received(binary: UnsafeRawBufferPointer, from peer: WebSocketLink) { client.onEvent(client, .binary(binary)) }
        func received(pong: UnsafeRawBufferPointer, from peer: WebSocketLink) { client.onEvent(client, .pong(pong)) }
        func received(close code: CloseCode, reason: String, from peer: WebSocketLink) { client.closeReason = reason }
        func failed(_ error: WebSocketError, on peer: WebSocketLink) { client.failure = "protocol error: \(error.reason)" }
        func closed(_ peer: WebSocketLink, code: CloseCode) { client.finish(code: code, error: client.failure) }
    }
}
