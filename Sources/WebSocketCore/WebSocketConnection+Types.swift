import Bytes
import Deflate

/// The types a connection speaks in: its limits, events and states.
extension WebSocketConnection {
    /// Limits on what the peer may send. Every limit is finite.
    public struct Limits: Sendable, Equatable {
        /// Largest frame payload. 16 MiB: the echo endpoint must take 16 MiB messages.
        public var maxFrameSize: Int
        /// Largest message, after decompression. 16 MiB for the same reason.
        public var maxMessageSize: Int

        public init(maxFrameSize: Int = 16 << 20, maxMessageSize: Int = 16 << 20) {
            self.maxFrameSize = maxFrameSize
            self.maxMessageSize = maxMessageSize
        }
    }

    /// What happened on the connection. Buffers are valid only during the callback.
    public enum Event {
        case text(UnsafeRawBufferPointer)
        case binary(UnsafeRawBufferPointer)
        /// A ping arrived; its pong is already queued.
        case ping(UnsafeRawBufferPointer)
        case pong(UnsafeRawBufferPointer)
        /// The close handshake finished or the peer started it (our reply is queued).
        /// `code` is `.noStatus` when the peer sent none.
        case closed(code: CloseCode, reason: String)
        /// The peer broke the protocol; a close frame with `error.closeCode` is queued.
        case failed(WebSocketError)
    }

    public enum State: Sendable, Equatable {
        case open
        /// We sent a close frame and wait for the peer's.
        case closing
        /// No more frames in either direction; the transport should close.
        case closed
    }
}
