import Bytes

/// Frame encoding (RFC 6455 §5.2): one allocation holding header and payload.
public enum FrameEncoder {
    /// Bytes of a header for this payload length and masking.
    public static func headerLength(payloadLength: Int, masked: Bool) -> Int {
        let base = payloadLength < 126 ? 2 : (payloadLength <= 0xFFFF ? 4 : 10)
        return base + (masked ? 4 : 0)
    }

    /// Writes a header into `destination` and returns its length.
    @discardableResult
    public static func writeHeader(
        into destination: UnsafeMutableRawBufferPointer, fin: Bool = true, rsv1: Bool = false,
        opcode: Opcode, payloadLength: Int, maskKey: UInt32? = nil
    ) -> Int {
        destination[0] = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        var index: Int
        if payloadLength < 126 {
            destination[1] = maskBit | UInt8(payloadLength)
            index = 2
        } else if payloadLength <= 0xFFFF {
            destination[1] = maskBit | 126
            destination[2] = UInt8(payloadLength >> 8)
            destination[3] = UInt8(truncatingIfNeeded: payloadLength)
            index = 4
        } else {
            destination[1] = maskBit | 127
            for i in 0..<8 { destination[2 + i] = UInt8(truncatingIfNeeded: UInt64(payloadLength) >> UInt64(56 - 8 * i)) }
            index = 10
        }
        if let key = maskKey {
            destination.baseAddress!.storeBytes(of: key.littleEndian, toByteOffset: index, as: UInt32.self)
            index += 4
        }
        return index
    }

    /// A complete frame; the payload is masked with `maskKey` when one is given.
    /// `replaceable`: see `SharedBytes.replaceable`.
    public static func frame(
        fin: Bool = true, rsv1: Bool = false, opcode: Opcode, payload: UnsafeRawBufferPointer, maskKey: UInt32? = nil, replaceable: Bool = false
    ) -> SharedBytes {
        let headerLength = headerLength(payloadLength: payload.count, masked: maskKey != nil)
        return SharedBytes(count: headerLength + payload.count, replaceable: replaceable) { buffer in
            writeHeader(into: buffer, fin: fin, rsv1: rsv1, opcode: opcode, payloadLength: payload.count, maskKey: maskKey)
            if payload.count > 0 {
                let body = UnsafeMutableRawBufferPointer(rebasing: buffer[headerLength...])
                body.copyMemory(from: payload)
                if let key = maskKey { Masking.apply(key: key, to: body) }
            }
        }
    }

    public static func frame(fin: Bool = true, rsv1: Bool = false, opcode: Opcode, payload: [UInt8], maskKey: UInt32? = nil,
                             replaceable: Bool = false) -> SharedBytes {
        payload.withUnsafeBytes { frame(fin: fin, rsv1: rsv1, opcode: opcode, payload: $0, maskKey: maskKey, replaceable: replaceable) }
    }

    /// The payload of a close frame: the code in network order and the reason, cut to
    /// fit 125 bytes at a character boundary.
    public static func closePayload(code: CloseCode?, reason: String) -> [UInt8] {
        guard let code else { return [] }
        var bytes = [UInt8(code.rawValue >> 8), UInt8(truncatingIfNeeded: code.rawValue)]
        var reasonBytes = 0
        for scalar in reason.unicodeScalars {
            let width = String(scalar).utf8.count
            guard reasonBytes + width <= 123 else { break }
            bytes += String(scalar).utf8
            reasonBytes += width
        }
        return bytes
    }
}
