import Bytes
import Deflate
import WebSocketCore

/// One server message encoded once for every receiver: the plain frame, and a
/// compressed frame for receivers that negotiated permessage-deflate.
public final class BroadcastFrame: Sendable {
    public let plain: SharedBytes
    public let compressed: SharedBytes?
    /// Length of the uncompressed payload.
    public let payloadLength: Int

    /// - Parameter deflater: a compressor that resets after every message (no context
    ///   takeover), or nil to send only the plain frame.
    /// - Parameter replaceable: a newer replaceable frame may take its place in a receiver's
    ///   queue while it is unsent (documents).
    public init(text payload: [UInt8], deflater: Deflater?, compressionThreshold: Int = 64, replaceable: Bool = false) {
        payloadLength = payload.count
        plain = FrameEncoder.frame(opcode: .text, payload: payload, replaceable: replaceable)
        if let deflater, payload.count >= compressionThreshold {
            var out = [UInt8]()
            payload.withUnsafeBytes { deflater.compress($0, into: &out) }
            compressed = FrameEncoder.frame(rsv1: true, opcode: .text, payload: out, replaceable: replaceable)
        } else {
            compressed = nil
        }
    }

    /// Calls `body` with the frame for a receiver whose compressor window is `windowBits`
    /// (nil: no deflate). A frame compressed with a 15-bit window only references bytes
    /// inside the message, so it suits any smaller window at least as long as the message.
    /// The frame is lent, not returned: a fan-out loop takes no reference count per receiver
    /// for it (the queue that keeps it takes one).
    @inline(__always)
    public func withFrame<Result>(forWindowBits windowBits: Int?, _ body: (SharedBytes) -> Result) -> Result {
        if compressed != nil, let windowBits, windowBits >= 15 || payloadLength <= 1 << windowBits {
            return body(compressed.unsafelyUnwrapped)
        }
        return body(plain)
    }
}
