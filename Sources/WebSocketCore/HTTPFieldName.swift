/// A header field's name as lookups give it. The names a WebSocket server reads on every
/// request are recognised once, as a head's fields are indexed, so finding one of them
/// compares a byte per field instead of its letters; any other name is compared as HTTP
/// does (ASCII letters in either case).
public struct HTTPFieldName: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The name as given (its case is not significant).
    public let text: String
    /// One of the recognised names (1 …), or 0.
    let code: UInt8

    public init(_ text: String) {
        var bytes = text
        self.text = text
        code = bytes.withUTF8(Self.code(of:))
    }

    public init(stringLiteral text: String) { self.init(text) }

    private init(_ text: String, code: UInt8) {
        self.text = text
        self.code = code
    }

    public var description: String { text }

    public static func == (lhs: HTTPFieldName, rhs: HTTPFieldName) -> Bool {
        lhs.code != 0 || rhs.code != 0 ? lhs.code == rhs.code : HTTPFields.sameName(lhs.text, rhs.text)
    }

    public func hash(into hasher: inout Hasher) {
        if code != 0 { hasher.combine(code); return }
        for byte in text.utf8 { hasher.combine(byte | (byte >= 0x41 && byte <= 0x5A ? 0x20 : 0)) }
    }

    public static let host = HTTPFieldName("Host", code: 1)
    public static let origin = HTTPFieldName("Origin", code: 2)
    public static let accept = HTTPFieldName("Accept", code: 3)
    public static let upgrade = HTTPFieldName("Upgrade", code: 4)
    public static let connection = HTTPFieldName("Connection", code: 5)
    public static let authorization = HTTPFieldName("Authorization", code: 6)
    public static let contentLength = HTTPFieldName("Content-Length", code: 7)
    public static let transferEncoding = HTTPFieldName("Transfer-Encoding", code: 8)
    public static let secWebSocketKey = HTTPFieldName("Sec-WebSocket-Key", code: 9)
    public static let secWebSocketAccept = HTTPFieldName("Sec-WebSocket-Accept", code: 10)
    public static let secWebSocketVersion = HTTPFieldName("Sec-WebSocket-Version", code: 11)
    public static let secWebSocketProtocol = HTTPFieldName("Sec-WebSocket-Protocol", code: 12)
    public static let secWebSocketExtensions = HTTPFieldName("Sec-WebSocket-Extensions", code: 13)

    /// The code of a recognised name spelt by `bytes` (in any ASCII case), or 0: the
    /// length picks the one candidate (two share 6 letters and two 17), then its letters.
    static func code(of bytes: UnsafeBufferPointer<UInt8>) -> UInt8 {
        let candidate: HTTPFieldName
        switch bytes.count {
        case 4: candidate = .host
        case 6: candidate = bytes[0] | 0x20 == UInt8(ascii: "o") ? .origin : .accept
        case 7: candidate = .upgrade
        case 10: candidate = .connection
        case 13: candidate = .authorization
        case 14: candidate = .contentLength
        case 17: candidate = bytes[0] | 0x20 == UInt8(ascii: "t") ? .transferEncoding : .secWebSocketKey
        case 20: candidate = .secWebSocketAccept
        case 21: candidate = .secWebSocketVersion
        case 22: candidate = .secWebSocketProtocol
        case 24: candidate = .secWebSocketExtensions
        default: return 0
        }
        var text = candidate.text
        return text.withUTF8 { HTTPFields.sameLetters(bytes, $0) } ? candidate.code : 0
    }
}
