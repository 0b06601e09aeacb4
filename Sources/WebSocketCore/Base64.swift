/// Standard base64 (RFC 4648 §4) with padding, as the WebSocket handshake uses it.
enum Base64 {
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    static func encode(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { encode($0) } }

    /// The encoding of `bytes`, written straight into the string's storage.
    static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: (bytes.count + 2) / 3 * 4) { encode(bytes, into: UnsafeMutableRawBufferPointer($0)) }
    }

    /// Writes the encoding of `bytes` into `out` (room for `(bytes.count + 2) / 3 * 4`); returns its length.
    static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        let alphabet = UnsafeBufferPointer(start: Self.alphabet.utf8Start, count: 64)
        var i = 0
        var o = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out[o] = alphabet[Int(n >> 18 & 63)]
            out[o + 1] = alphabet[Int(n >> 12 & 63)]
            out[o + 2] = alphabet[Int(n >> 6 & 63)]
            out[o + 3] = alphabet[Int(n & 63)]
            i += 3
            o += 4
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out[o] = alphabet[Int(n >> 18 & 63)]
            out[o + 1] = alphabet[Int(n >> 12 & 63)]
            out[o + 2] = rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "=")
            out[o + 3] = UInt8(ascii: "=")
            o += 4
        }
        return o
    }

    /// Decodes canonical padded base64; nil for anything else.
    static func decode(_ text: String) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count / 4 * 3)
        return decode(text, { out.append($0) }) ? out : nil
    }

    /// How many bytes canonical padded base64 `text` holds (as `decode(text)?.count`, without
    /// making them); nil when it is not that.
    static func decodedCount(_ text: String) -> Int? {
        var text = text
        return text.withUTF8 { decodedCount($0) }
    }

    /// `decodedCount` of text given as its bytes.
    static func decodedCount(_ chars: UnsafeBufferPointer<UInt8>) -> Int? {
        var count = 0
        return decode(chars, { _ in count += 1 }) ? count : nil
    }

    /// Hands each decoded byte to `byte`; false when `text` is not canonical padded base64.
    private static func decode(_ text: String, _ byte: (UInt8) -> Void) -> Bool {
        var text = text
        return text.withUTF8 { decode($0, byte) }
    }

    private static func decode(_ chars: UnsafeBufferPointer<UInt8>, _ byte: (UInt8) -> Void) -> Bool {
        guard chars.count % 4 == 0 else { return false }
        var i = 0
        while i < chars.count {
            var n: UInt32 = 0
            var padding = 0
            for j in 0..<4 {
                let c = chars[i + j]
                let value: UInt32
                switch c {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
                case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a") + 26)
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0") + 52)
                case UInt8(ascii: "+"): value = 62
                case UInt8(ascii: "/"): value = 63
                case UInt8(ascii: "=") where i + 4 == chars.count && j >= 2: value = 0; padding += 1
                default: return false
                }
                if padding > 0 && c != UInt8(ascii: "=") { return false }
                n = n << 6 | value
            }
            byte(UInt8(n >> 16))
            if padding < 2 { byte(UInt8(truncatingIfNeeded: n >> 8)) }
            if padding < 1 { byte(UInt8(truncatingIfNeeded: n)) }
            i += 4
        }
        return true
    }
}
