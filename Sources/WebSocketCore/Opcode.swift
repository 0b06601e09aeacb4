/// A frame opcode (RFC 6455 §5.2).
public enum Opcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong (§5.5): at most 125 bytes, never fragmented.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// The fixed part of a frame (RFC 6455 §5.2), as decoded.
public struct FrameHeader: Sendable, Equatable {
    // Stored large to small: a connection keeps the header of the frame it is decoding.
    public var payloadLength: UInt64
    public var maskKey: UInt32?
    public var fin: Bool
    /// RSV1; permessage-deflate uses it to mark a compressed message (RFC 7692 §6).
    public var rsv1: Bool
    public var rsv2: Bool
    public var rsv3: Bool
    public var opcode: Opcode

    public init(fin: Bool, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false, opcode: Opcode, maskKey: UInt32? = nil, payloadLength: UInt64) {
        self.fin = fin
        self.rsv1 = rsv1
        self.rsv2 = rsv2
        self.rsv3 = rsv3
        self.opcode = opcode
        self.maskKey = maskKey
        self.payloadLength = payloadLength
    }
}
