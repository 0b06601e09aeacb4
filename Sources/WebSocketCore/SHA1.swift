/// SHA-1 (FIPS 180-4), only for `Sec-WebSocket-Accept` (RFC 6455 §4.2.2).
/// Not for anything that needs collision resistance.
enum SHA1 {
    static let digestSize = 20

    static func hash(_ message: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: digestSize) { digest, count in
            message.withUnsafeBytes { hash($0, into: UnsafeMutableRawBufferPointer(digest)) }
            count = digestSize
        }
    }

    /// Writes the 20-byte digest of `message` into `digest`, allocating nothing.
    static func hash(_ message: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer) {
        precondition(digest.count >= digestSize)
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { w in
            withUnsafeTemporaryAllocation(byteCount: 128, alignment: 1) { tail in
                let whole = message.count / 64 * 64
                var offset = 0
                while offset < whole {
                    compress(UnsafeRawBufferPointer(rebasing: message[offset..<(offset + 64)]), &h, w)
                    offset += 64
                }
                // The last bytes, 0x80, zeros and the bit length: one block or two.
                let rest = message.count - whole
                let tailCount = rest < 56 ? 64 : 128
                tail.initializeMemory(as: UInt8.self, repeating: 0)
                UnsafeMutableRawBufferPointer(rebasing: tail[..<rest]).copyMemory(from: UnsafeRawBufferPointer(rebasing: message[whole...]))
                tail[rest] = 0x80
                let bitLength = UInt64(message.count) &* 8
                for i in 0..<8 { tail[tailCount - 1 - i] = UInt8(truncatingIfNeeded: bitLength >> UInt64(8 * i)) }
                compress(UnsafeRawBufferPointer(rebasing: tail[..<64]), &h, w)
                if tailCount == 128 { compress(UnsafeRawBufferPointer(rebasing: tail[64..<128]), &h, w) }
            }
        }
        digest.storeBytes(of: h.0.bigEndian, toByteOffset: 0, as: UInt32.self)
        digest.storeBytes(of: h.1.bigEndian, toByteOffset: 4, as: UInt32.self)
        digest.storeBytes(of: h.2.bigEndian, toByteOffset: 8, as: UInt32.self)
        digest.storeBytes(of: h.3.bigEndian, toByteOffset: 12, as: UInt32.self)
        digest.storeBytes(of: h.4.bigEndian, toByteOffset: 16, as: UInt32.self)
    }

    private static func compress(_ block: UnsafeRawBufferPointer, _ h: inout (UInt32, UInt32, UInt32, UInt32, UInt32), _ w: UnsafeMutableBufferPointer<UInt32>) {
        for i in 0..<16 { w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)) }
        for i in 16..<80 { w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotatedLeft(1) }
        var (a, b, c, d, e) = h
        // Four loops of twenty rounds, each with its own function and constant.
        for i in 0..<20 {
            let t = a.rotatedLeft(5) &+ (d ^ (b & (c ^ d))) &+ e &+ 0x5A82_7999 &+ w[i]
            e = d; d = c; c = b.rotatedLeft(30); b = a; a = t
        }
        for i in 20..<40 {
            let t = a.rotatedLeft(5) &+ (b ^ c ^ d) &+ e &+ 0x6ED9_EBA1 &+ w[i]
            e = d; d = c; c = b.rotatedLeft(30); b = a; a = t
        }
        for i in 40..<60 {
            let t = a.rotatedLeft(5) &+ ((b & c) | (d & (b | c))) &+ e &+ 0x8F1B_BCDC &+ w[i]
            e = d; d = c; c = b.rotatedLeft(30); b = a; a = t
        }
        for i in 60..<80 {
            let t = a.rotatedLeft(5) &+ (b ^ c ^ d) &+ e &+ 0xCA62_C1D6 &+ w[i]
            e = d; d = c; c = b.rotatedLeft(30); b = a; a = t
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt32) -> UInt32 { (self &<< count) | (self &>> (32 &- count)) }
}
