/// XOR masking (RFC 6455 §5.3), eight bytes at a time.
public enum Masking {
    /// Applies `key` to `bytes` in place. `phase` is how many payload bytes came before
    /// this chunk (only its value mod 4 matters); returns the phase after it.
    @discardableResult
    public static func apply(key: UInt32, to bytes: UnsafeMutableRawBufferPointer, phase: Int = 0) -> Int {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return phase }
        // `key` holds the four key bytes in wire order in memory (little-endian load).
        let shift = UInt32((phase & 3) * 8)
        let rotated = shift == 0 ? key : (key >> shift) | (key << (32 - shift))
        let wide = UInt64(rotated) | UInt64(rotated) << 32
        let count = bytes.count
        var i = 0
        while i + 8 <= count {
            let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            base.storeBytes(of: word ^ wide, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        var k = rotated
        while i < count {
            base.storeBytes(of: base.load(fromByteOffset: i, as: UInt8.self) ^ UInt8(truncatingIfNeeded: k), toByteOffset: i, as: UInt8.self)
            k = (k >> 8) | (k << 24)
            i += 1
        }
        return (phase + count) & 3
    }

    /// The key as the four bytes that follow the length on the wire.
    public static func keyBytes(_ key: UInt32) -> [UInt8] {
        withUnsafeBytes(of: key.littleEndian) { Array($0) }
    }

    /// Reads a key from the four wire bytes at `pointer`.
    public static func key(at pointer: UnsafeRawPointer) -> UInt32 {
        UInt32(littleEndian: pointer.loadUnaligned(as: UInt32.self))
    }
}
