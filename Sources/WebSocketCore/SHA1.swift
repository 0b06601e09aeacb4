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
        // Five rounds per pass, the variables taking turns (no shuffling between rounds).
        @inline(__always)
        func round(_ a: UInt32, _ b: inout UInt32, _ e: inout UInt32, _ f: UInt32, _ k: UInt32, _ i: Int) {
            e = e &+ a.rotatedLeft(5) &+ f &+ k &+ w[i]
            b = b.rotatedLeft(30)
        }
        for i in stride(from: 0, to: 20, by: 5) {
            round(a, &b, &e, d ^ (b & (c ^ d)), 0x5A82_7999, i + 0)
            round(e, &a, &d, c ^ (a & (b ^ c)), 0x5A82_7999, i + 1)
            round(d, &e, &c, b ^ (e & (a ^ b)), 0x5A82_7999, i + 2)
            round(c, &d, &b, a ^ (d & (e ^ a)), 0x5A82_7999, i + 3)
            round(b, &c, &a, e ^ (c & (d ^ e)), 0x5A82_7999, i + 4)
        }
        for i in stride(from: 20, to: 40, by: 5) {
            round(a, &b, &e, b ^ c ^ d, 0x6ED9_EBA1, i + 0)
            round(e, &a, &d, a ^ b ^ c, 0x6ED9_EBA1, i + 1)
            round(d, &e, &c, e ^ a ^ b, 0x6ED9_EBA1, i + 2)
            round(c, &d, &b, d ^ e ^ a, 0x6ED9_EBA1, i + 3)
            round(b, &c, &a, c ^ d ^ e, 0x6ED9_EBA1, i + 4)
        }
        for i in stride(from: 40, to: 60, by: 5) {
            round(a, &b, &e, (b & c) | (d & (b | c)), 0x8F1B_BCDC, i + 0)
            round(e, &a, &d, (a & b) | (c & (a | b)), 0x8F1B_BCDC, i + 1)
            round(d, &e, &c, (e & a) | (b & (e | a)), 0x8F1B_BCDC, i + 2)
            round(c, &d, &b, (d & e) | (a & (d | e)), 0x8F1B_BCDC, i + 3)
            round(b, &c, &a, (c & d) | (e & (c | d)), 0x8F1B_BCDC, i + 4)
        }
        for i in stride(from: 60, to: 80, by: 5) {
            round(a, &b, &e, b ^ c ^ d, 0xCA62_C1D6, i + 0)
            round(e, &a, &d, a ^ b ^ c, 0xCA62_C1D6, i + 1)
            round(d, &e, &c, e ^ a ^ b, 0xCA62_C1D6, i + 2)
            round(c, &d, &b, d ^ e ^ a, 0xCA62_C1D6, i + 3)
            round(b, &c, &a, c ^ d ^ e, 0xCA62_C1D6, i + 4)
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt32) -> UInt32 { (self &<< count) | (self &>> (32 &- count)) }
}
