/// Incremental UTF-8 validation (RFC 3629, Unicode Table 3-7) that fails at the first
/// byte that cannot start or continue a valid sequence, across any chunk boundary.
/// Overlong forms, surrogates (U+D800–U+DFFF) and code points above U+10FFFF are refused.
public struct UTF8Validator: Sendable {
    private var needed: UInt8 = 0
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    public init() {}

    /// True when no multi-byte sequence is open (the text may end here).
    public var isComplete: Bool { needed == 0 }

    /// Validates the next chunk; false as soon as it cannot be valid UTF-8.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        var i = 0
        while i < count {
            if needed == 0 {
                // ASCII fast path: eight bytes at a time.
                while i + 8 <= count, base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    i += 8
                }
                guard i < count else { break }
                let byte = base.load(fromByteOffset: i, as: UInt8.self)
                switch byte {
                case 0x00...0x7F: break
                case 0xC2...0xDF: needed = 1
                case 0xE0: needed = 2; lower = 0xA0
                case 0xE1...0xEC, 0xEE...0xEF: needed = 2
                case 0xED: needed = 2; upper = 0x9F
                case 0xF0: needed = 3; lower = 0x90
                case 0xF1...0xF3: needed = 3
                case 0xF4: needed = 3; upper = 0x8F
                default: return false
                }
            } else {
                let byte = base.load(fromByteOffset: i, as: UInt8.self)
                guard byte >= lower && byte <= upper else { return false }
                needed -= 1
                lower = 0x80
                upper = 0xBF
            }
            i += 1
        }
        return true
    }

    /// Validates a whole text at once.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.feed(bytes) && validator.isComplete
    }

    public static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isValid($0) }
    }
}
