package import Access
import HTTP1
import Bytes
import Hub
import Transport
import WebSocketChannel
import WebSocketCore

/// A WebSocket endpoint: it admits upgrade requests on its path and makes a session for each.
public protocol WebSocketEndpoint: Sendable {
    /// Subprotocols spoken, in order of preference; the first one the client offers is chosen.
    var subprotocols: [String] { get }
    /// Limits on what clients may send here.
    var limits: WebSocketConnection.Limits { get }
    /// Whether compressed broadcast frames are shared by all receivers. Then the server
    /// always negotiates `server_no_context_takeover`, so one compressed frame suits everyone.
    var sharesCompressedFrames: Bool { get }
    /// The kernel send buffer this endpoint's sockets need (and the unsent bytes they may
    /// hold), or nil for what a socket is accepted with.
    var sendBuffer: SendBufferSize? { get }
    /// Whether `path` belongs to this endpoint.
    func matches(path: Substring) -> Bool
    /// Admits a request (query, credentials) and makes its session on `peer` (the
    /// connection it arrived on, about to be upgraded), or refuses it with an HTTP answer
    /// that says why. Runs on the connection's event loop.
    func makeSession(for request: HTTPRequest, from address: String, peer: WebSocketPeer) -> Result<any WebSocketSession, HTTPError>
}

extension WebSocketEndpoint {
    public var sharesCompressedFrames: Bool { false }
    public var sendBuffer: SendBufferSize? { nil }
}

/// A plain HTTP endpoint (GET, and HEAD for its head), e.g. `/healthz` or `/metrics`.
public protocol HTTPEndpoint: Sendable {
    var path: String { get }
    /// Whether this endpoint answers `request`, whose path is `path` (by default: its path is
    /// `self.path`). Asked of every request before a WebSocket upgrade: compare bytes.
    func matches(_ request: HTTPRequest, path: Substring) -> Bool
    /// The answer to `request` from `address` (a client group, `AddressGrouping`); runs on the
    /// connection's event loop and must not block.
    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse
    /// The same for an answer that takes a while (a presenter key's slow hash): `answer` runs
    /// once, on `loop`. By default `respond(to:from:)`'s answer, at once.
    func respond(to request: HTTPRequest, from address: String, on loop: EventLoop, answer: @escaping (HTTPResponse) -> Void)
}

extension HTTPEndpoint {
    public func matches(_ request: HTTPRequest, path: Substring) -> Bool { path.utf8.elementsEqual(self.path.utf8) }
    public func respond(to request: HTTPRequest, from address: String, on loop: EventLoop, answer: @escaping (HTTPResponse) -> Void) {
        answer(respond(to: request, from: address))
    }
}
