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

    /// The recognised name with `code`, spelt as `recognisedLetters` gives it.
    private init(code: UInt8) {
        text = Self.recognisedLetters(code).description
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

    public static let host = HTTPFieldName(code: 1)
    public static let origin = HTTPFieldName(code: 2)
    public static let accept = HTTPFieldName(code: 3)
    public static let upgrade = HTTPFieldName(code: 4)
    public static let connection = HTTPFieldName(code: 5)
    public static let authorization = HTTPFieldName(code: 6)
    public static let contentLength = HTTPFieldName(code: 7)
    public static let transferEncoding = HTTPFieldName(code: 8)
    public static let secWebSocketKey = HTTPFieldName(code: 9)
    public static let secWebSocketAccept = HTTPFieldName(code: 10)
    public static let secWebSocketVersion = HTTPFieldName(code: 11)
    public static let secWebSocketProtocol = HTTPFieldName(code: 12)
    public static let secWebSocketExtensions = HTTPFieldName(code: 13)

    /// The code of a recognised name spelt by `bytes` (in any ASCII case), or 0: the
    /// length picks the one candidate (two share 6 letters and two 17), then its letters.
    /// The candidates' letters are static text: recognising a field touches no reference count.
    static func code(of bytes: UnsafeBufferPointer<UInt8>) -> UInt8 {
        let code: UInt8
        switch bytes.count {
        case 4: code = 1
        case 6: code = bytes[0] | 0x20 == UInt8(ascii: "o") ? 2 : 3
        case 7: code = 4
        case 10: code = 5
        case 13: code = 6
        case 14: code = 7
        case 17: code = bytes[0] | 0x20 == UInt8(ascii: "t") ? 8 : 9
        case 20: code = 10
        case 21: code = 11
        case 22: code = 12
        case 24: code = 13
        default: return 0
        }
        let letters = recognisedLetters(code)
        return HTTPFields.sameLetters(bytes, UnsafeBufferPointer(start: letters.utf8Start, count: letters.utf8CodeUnitCount)) ? code : 0
    }

    /// The letters of the recognised name with `code` (1 …): the one table of them.
    private static func recognisedLetters(_ code: UInt8) -> StaticString {
        switch code {
        case 1: "Host"
        case 2: "Origin"
        case 3: "Accept"
        case 4: "Upgrade"
        case 5: "Connection"
        case 6: "Authorization"
        case 7: "Content-Length"
        case 8: "Transfer-Encoding"
        case 9: "Sec-WebSocket-Key"
        case 10: "Sec-WebSocket-Accept"
        case 11: "Sec-WebSocket-Version"
        case 12: "Sec-WebSocket-Protocol"
        default: "Sec-WebSocket-Extensions"
        }
    }
}
