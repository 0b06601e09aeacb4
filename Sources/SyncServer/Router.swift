package import Access
import HTTP1
import Deflate
import Hub
import Logging
import Operations
import Transport
import WebSocketChannel
import WebSocketCore

/// Finds the endpoint for a request and negotiates the upgrade with it.
final class Router: Sendable {
    struct Admitted {
        let session: any WebSocketSession
        /// The 101 answer's bytes, with room for the session's first frames.
        private(set) var response: [UInt8]
        let deflate: PerMessageDeflate?
        let limits: WebSocketConnection.Limits
        /// The send buffer to set on the socket, nil when it was accepted with it.
        let sendBuffer: SendBufferSize?

        /// Moves the answer out, so that its one owner can append the first frames in place.
        mutating func takeResponse() -> [UInt8] {
            defer { response = [] }
            return response
        }
    }

    let configuration: ServerConfiguration
    let endpoints: [any WebSocketEndpoint]
    let httpEndpoints: [any HTTPEndpoint]
    /// Terminal readers' streams (`/rooms/NAME/tty`), if served.
    let tty: TTYEndpoint?
    let connectionLimits: ConnectionLimits
    let counters: ServerCounters
    let logger: Logger
    /// What unfinished messages may hold across every connection (`limits.unfinishedMessageBytes`).
    let messageBudget: MessageBudget
    /// What per-address limits count as one client (an IPv6 /64 by default).
    let grouping: AddressGrouping
    /// The send buffer sockets are accepted with (the listening socket's), if any.
    let acceptedSendBuffer: SendBufferSize?
    /// Which browser pages may connect (`origins`).
    let origins: Reloadable<OriginPolicy>
    /// One compressor per loop for connections whose server compressor keeps no context
    /// (each zlib stream costs about 256 KiB; shared, a loop pays it once).
    private let sharedDeflaters: [LoopDeflater]

    init(configuration: ServerConfiguration, endpoints: [any WebSocketEndpoint], httpEndpoints: [any HTTPEndpoint], loops: Int,
         acceptedSendBuffer: SendBufferSize?, counters: ServerCounters, messageBudget: MessageBudget, logger: Logger, tty: TTYEndpoint? = nil) {
        self.configuration = configuration
        self.tty = tty
        self.acceptedSendBuffer = acceptedSendBuffer
        self.counters = counters
        self.endpoints = endpoints
        self.httpEndpoints = httpEndpoints
        self.logger = logger
        self.messageBudget = messageBudget
        origins = Reloadable(OriginPolicy(allowed: configuration.allowedOrigins))
        grouping = AddressGrouping(ipv6PrefixLength: configuration.limits.ipv6PrefixLength)
        connectionLimits = ConnectionLimits(total: configuration.limits.connections, perAddress: configuration.limits.connectionsPerAddress,
                                            grouping: grouping) { [refusals = counters.refusalReasons] in refusals.count(.connections) }
        sharedDeflaters = (0..<loops).map { _ in LoopDeflater() }
    }

    /// The compressor shared by the connections of `loop` (use on that loop only).
    func sharedDeflater(for loop: EventLoop) -> Deflater { sharedDeflaters[loop.index].deflater }

    /// Answers a plain HTTP request for one of the HTTP endpoints (`answer` runs once, on
    /// `loop`, maybe later); false when the request is for none of them. Never asked of a
    /// WebSocket upgrade (the peer tells one apart first and `route`s it: an upgrade is
    /// never an HTTP endpoint's). HEAD gets GET's head without the body (RFC 9110 §9.3.2).
    func respond(to request: HTTPRequest, from address: String, on loop: EventLoop, answer: @escaping (HTTPResponse) -> Void) -> Bool {
        let path = request.path
        guard let endpoint = httpEndpoints.first(where: { $0.matches(request, path: path) }) else { return false }
        guard request.method == "GET" || request.method == "HEAD" else {
            answer(.error(405, "\(path) answers GET and HEAD only", headers: [("Allow", "GET, HEAD")]))
            return true
        }
        guard !request.hasContent else {
            answer(.error(400, "\(path) takes no request content"))
            return true
        }
        let omitsBody = request.method == "HEAD"
        endpoint.respond(to: request, from: grouping.group(address), on: loop) { response in
            var response = response
            if response.value("Connection") == nil { response.headers.append(("Connection", "close")) }  // errors carry it
            response.omitsBody = omitsBody
            answer(response)
        }
        return true
    }

    /// A terminal reader's request (`GET /rooms/NAME/tty`, never an upgrade): its stream, or
    /// the answer (a refusal, or a browser's page); nil for any other request.
    func openStream(_ request: HTTPRequest, for peer: WebSocketPeer) -> TTYEndpoint.Opening? {
        guard let tty, let name = TTYEndpoint.room(in: request.path) else { return nil }
        let opening = tty.open(request, name: name, from: grouping.group(peer.channel.peerAddress), peer: peer)
        guard case .answer(var response) = opening, response.value("Connection") == nil else { return opening }
        response.headers.append(("Connection", "close"))
        return .answer(response)
    }

    /// Room after the 101 answer for what a session sends as it opens (a room's welcome is
    /// about 300 bytes), so that it is framed in place.
    static let firstFramesCapacity = 512

    /// 404 for an unknown path; the handshake checks (400/405/426) for a bad upgrade; 403
    /// for a browser `Origin` not allowed; whatever the endpoint says about the request;
    /// else the 101 answer.
    func route(_ request: HTTPRequest, for peer: WebSocketPeer) -> Result<Admitted, HTTPError> {
        let path = request.path
        guard let endpoint = endpoints.first(where: { $0.matches(path: path) }) else {
            return .failure(HTTPError(.error(404, "no endpoint at \(path)")))
        }
        let upgrade: ServerHandshake.Upgrade
        switch ServerHandshake.validate(request) {
        case .failure(let error): return .failure(error)
        case .success(let valid): upgrade = valid
        }
        if let origin = request.value(.origin), let refusal = origins.value.refusal(origin: origin, host: request.value(.host)) {
            counters.refusalReasons.count(.origin)
            return .failure(HTTPError(.error(403, refusal)))
        }
        let session: any WebSocketSession
        switch endpoint.makeSession(for: request, from: grouping.group(peer.channel.peerAddress), peer: peer) {
        case .failure(let error): return .failure(error)
        case .success(let made): session = made
        }
        let subprotocol = upgrade.protocols.first { endpoint.subprotocols.contains($0) }
        var policy = configuration.deflate
        if endpoint.sharesCompressedFrames { policy.alwaysNoContextTakeover = true }
        let negotiated = PerMessageDeflate.negotiate(offers: upgrade.extensions, policy: policy)
        let response = ServerHandshake.responseBytes(for: upgrade, subprotocol: subprotocol, extensions: negotiated?.1,
                                                     spareCapacity: Self.firstFramesCapacity)
        return .success(Admitted(session: session, response: response, deflate: negotiated?.0, limits: endpoint.limits,
                                sendBuffer: endpoint.sendBuffer == acceptedSendBuffer ? nil : endpoint.sendBuffer))
    }
}

/// A loop's compressor, reset after every message. Used only on its loop's thread.
private final class LoopDeflater: @unchecked Sendable {
    let deflater = Deflater(windowBits: 15, noContextTakeover: true)
}
