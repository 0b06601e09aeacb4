/// Incremental frame decoder (RFC 6455 §5.2) that never buffers payload.
///
/// Input may be split at any byte. Only a partial header (at most 14 bytes) is kept
/// between calls; payload bytes are unmasked in place in the caller's buffer and
/// handed out as slices of it, valid until the caller reuses that buffer.
public struct FrameDecoder: Sendable {
    public enum Event {
        /// A frame begins. Its payload follows as zero or more `.payload` events, then `.end`.
        case header(FrameHeader)
        /// Unmasked payload bytes of the current frame.
        case payload(UnsafeMutableRawBufferPointer)
        /// The current frame (this header's) is complete.
        case end(FrameHeader)
    }

    // Stored large to small: one decoder per connection, so its size is per-connection memory.
    private var spill: (UInt64, UInt64) = (0, 0)
    private var remaining: UInt64 = 0
    /// The frame whose payload is being decoded.
    public private(set) var header: FrameHeader?
    private let frameLimit: UInt32
    /// Whether frames must be masked (a server's view) or must not be (a client's).
    public let expectMasked: Bool
    private var spillCount: UInt8 = 0
    private var maskPhase: UInt8 = 0
    private var pendingEnd = false

    /// Largest frame payload accepted.
    public var maxFrameSize: Int { Int(frameLimit) }

    /// - Parameter maxFrameSize: largest frame payload accepted (at most 4 GiB); larger
    ///   frames fail with `tooLarge` at the header.
    public init(maxFrameSize: Int, expectMasked: Bool) {
        frameLimit = UInt32(clamping: maxFrameSize)
        self.expectMasked = expectMasked
    }

    /// The most bytes a peer's DEFLATE may turn `count` bytes into, whatever its settings:
    /// zlib's bound for fixed Huffman codes (9 bits for some literals: 1/8 more), which is above
    /// its bound for stored blocks at any memLevel (Python's websockets compresses with
    /// memLevel 5, where incompressible data grows by about 4 %, not the 0.03 % of the default
    /// settings), with room for the sync flush's empty block. The message is held to the limit
    /// by its inflated size.
    static func deflatedBound(_ count: UInt64) -> UInt64 {
        count + count >> 3 + count >> 8 + count >> 9 + 32
    }

    /// Decodes the next event from `input[position...]`, advancing `position`.
    /// Returns nil when the input is used up.
    public mutating func next(_ input: UnsafeMutableRawBufferPointer, position: inout Int) throws(WebSocketError) -> Event? {
        if pendingEnd, let finished = header {
            pendingEnd = false
            header = nil
            return .end(finished)
        }
        if let header {
            guard position < input.count else { return nil }
            let take = Int(min(remaining, UInt64(input.count - position)))
            let chunk = UnsafeMutableRawBufferPointer(rebasing: input[position..<(position + take)])
            position += take
            remaining -= UInt64(take)
            if let key = header.maskKey { maskPhase = UInt8(Masking.apply(key: key, to: chunk, phase: Int(maskPhase))) }
            if remaining == 0 { pendingEnd = true }
            return .payload(chunk)
        }
        guard let next = try readHeader(input, position: &position) else { return nil }
        header = next
        remaining = next.payloadLength
        maskPhase = 0
        if remaining == 0 { pendingEnd = true }
        return .header(next)
    }

    private mutating func readHeader(_ input: UnsafeMutableRawBufferPointer, position: inout Int) throws(WebSocketError) -> FrameHeader? {
        // Gather the header into the spill until it is complete.
        while true {
            let count = Int(spillCount)
            let needed = withUnsafeBytes(of: &spill) { Self.headerLength($0, count: count) }
            if count >= needed { break }
            guard position < input.count else { return nil }
            let take = min(needed - count, input.count - position)
            withUnsafeMutableBytes(of: &spill) { spillBytes in
                spillBytes.baseAddress!.advanced(by: count)
                    .copyMemory(from: input.baseAddress!.advanced(by: position), byteCount: take)
            }
            spillCount += UInt8(take)
            position += take
        }
        spillCount = 0
        let spillCopy = spill
        return try withUnsafeBytes(of: spillCopy) { bytes throws(WebSocketError) in try parseHeader(bytes) }
    }

    /// How many header bytes a frame needs, given the first `count` bytes (at least 2).
    private static func headerLength(_ bytes: UnsafeRawBufferPointer, count: Int) -> Int {
        guard count >= 2 else { return 2 }
        let masked = bytes[1] & 0x80 != 0
        let extra = switch bytes[1] & 0x7F {
        case 126: 2
        case 127: 8
        default: 0
        }
        return 2 + extra + (masked ? 4 : 0)
    }

    private func parseHeader(_ bytes: UnsafeRawBufferPointer) throws(WebSocketError) -> FrameHeader {
        let fin = bytes[0] & 0x80 != 0
        guard let opcode = Opcode(rawValue: bytes[0] & 0x0F) else {
            throw .protocolViolation("reserved opcode 0x\(String(bytes[0] & 0x0F, radix: 16))")
        }
        let masked = bytes[1] & 0x80 != 0
        guard masked == expectMasked else {
            throw .protocolViolation(expectMasked ? "client frames must be masked" : "server frames must not be masked")
        }
        var length = UInt64(bytes[1] & 0x7F)
        var index = 2
        if length == 126 {
            length = UInt64(bytes[2]) << 8 | UInt64(bytes[3])
            index = 4
        } else if length == 127 {
            length = (2..<10).reduce(0) { $0 << 8 | UInt64(bytes[$1]) }
            index = 10
            guard length >> 63 == 0 else { throw .protocolViolation("64-bit length with the high bit set") }
        }
        if opcode.isControl {
            guard fin else { throw .protocolViolation("fragmented control frame") }
            guard length <= 125 else { throw .protocolViolation("control frame longer than 125 bytes") }
        }
        // The limit is on what the application gets: a compressed frame (RSV1) may be as long
        // as deflate makes the largest message allowed (incompressible data grows a little).
        let compressed = bytes[0] & 0x40 != 0
        let limit = compressed ? Self.deflatedBound(UInt64(maxFrameSize)) : UInt64(maxFrameSize)
        guard length <= limit else { throw .tooLarge(limit: maxFrameSize) }
        let key: UInt32? = masked ? Masking.key(at: bytes.baseAddress!.advanced(by: index)) : nil
        return FrameHeader(
            fin: fin, rsv1: compressed, rsv2: bytes[0] & 0x20 != 0, rsv3: bytes[0] & 0x10 != 0,
            opcode: opcode, maskKey: key, payloadLength: length)
    }
}
