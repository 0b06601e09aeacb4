/// A session's id: 64 bits, written as 16 lowercase hex digits on the wire
/// (PROTOCOL.md §2). Kept as a number inside the server, where there is one per
/// connection: a 16-digit `String` does not fit Swift's 15-byte inline form and would
/// cost a heap allocation per connection.
public struct SessionID: Hashable, Sendable, Comparable, LosslessStringConvertible {
    public let value: UInt64

    public init(_ value: UInt64) { self.value = value }

    /// Parses exactly 16 lowercase hex digits (the only form the protocol gives ids).
    public init?(_ text: String) {
        var value: UInt64 = 0
        var count = 0
        for byte in text.utf8 {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            count += 1
            guard count <= 16 else { return nil }
            value = value << 4 | UInt64(digit)
        }
        guard count == 16 else { return nil }
        self.value = value
    }

    /// The wire form: 16 lowercase hex digits.
    public var description: String { hex16(value) }

    public static func < (a: SessionID, b: SessionID) -> Bool { a.value < b.value }
}

/// `value` as 16 lowercase hex digits, zeros in front: how the protocol writes session ids
/// and document fingerprints.
func hex16(_ value: UInt64) -> String {
    String(unsafeUninitializedCapacity: 16) { buffer in
        writeHex16(value, into: buffer.baseAddress!)
        return 16
    }
}

/// Writes `value` as 16 lowercase hex digits at `out`.
func writeHex16(_ value: UInt64, into out: UnsafeMutablePointer<UInt8>) {
    let digits: StaticString = "0123456789abcdef"
    for i in 0..<16 {
        let nibble = Int(truncatingIfNeeded: value >> UInt64(60 - 4 * i)) & 0xF
        out[i] = digits.utf8Start[nibble]
    }
}
