import Bytes
import WebSocketCore

/// The application side of one WebSocket connection (or stream). Calls come on its event loop.
public protocol WebSocketSession: AnyObject {
    func opened(_ peer: WebSocketLink)
    func received(text: UnsafeRawBufferPointer, from peer: WebSocketLink)
    func received(binary: UnsafeRawBufferPointer, from peer: WebSocketLink)
    /// The answer to a `ping`, with its payload.
    func received(pong: UnsafeRawBufferPointer, from peer: WebSocketLink)
    /// The peer's close frame (`code` is `.noStatus` when it gave none); `closed` follows.
    func received(close code: CloseCode, reason: String, from peer: WebSocketLink)
    /// The peer broke the protocol: a close frame with `error.closeCode` is on its way.
    func failed(_ error: WebSocketError, on peer: WebSocketLink)
    /// The connection ended: closed by either side or dropped (`.abnormal`).
    func closed(_ peer: WebSocketLink, code: CloseCode)
}

extension WebSocketSession {
    public func opened(_ peer: WebSocketLink) {}
    public func received(binary: UnsafeRawBufferPointer, from peer: WebSocketLink) {}
    public func received(pong: UnsafeRawBufferPointer, from peer: WebSocketLink) {}
    public func received(close code: CloseCode, reason: String, from peer: WebSocketLink) {}
    public func failed(_ error: WebSocketError, on peer: WebSocketLink) {}
}

/// A plain HTTP stream a link carries instead of WebSocket (a terminal reader's frames, as
/// chunks): what keeps a quiet one open through proxies, and what ends it. The link reads
/// nothing else of it; what the stream is (a terminal's size) is its owner's.
public protocol LinkStream: AnyObject {
    /// Sent after `keepAliveSeconds` without a frame; it must change nothing for the reader.
    var keepAlive: SharedBytes { get }
    var keepAliveSeconds: UInt32 { get }
    /// The stream's last bytes, saying why it ends.
    func end(reason: String) -> SharedBytes
}
