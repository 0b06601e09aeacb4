import HTTP1
import Hub
import WebSocketChannel
import WebSocketCore
import Transport

/// `/echo`: sends every message back unchanged. For conformance and interoperability tests.
public struct EchoEndpoint: WebSocketEndpoint {
    public let limits: WebSocketConnection.Limits
    public var subprotocols: [String] { [] }

    public init(limits: WebSocketConnection.Limits) { self.limits = limits }

    public func matches(path: Substring) -> Bool { path.utf8.elementsEqual("/echo".utf8) }

    public func makeSession(for request: HTTPRequest, from address: String, peer: WebSocketPeer) -> Result<any WebSocketSession, HTTPError> {
        .success(EchoSession())
    }
}

final class EchoSession: WebSocketSession {
    func received(text: UnsafeRawBufferPointer, from peer: WebSocketLink) { peer.send(text: text) }
    func received(binary: UnsafeRawBufferPointer, from peer: WebSocketLink) { peer.send(binary: binary) }
    func closed(_ peer: WebSocketLink, code: CloseCode) {}
}
