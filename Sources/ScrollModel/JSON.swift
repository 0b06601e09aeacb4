/// A JSON value (RFC 8259), parsed without Foundation so that numbers keep their text:
/// `t` is carried through exactly as the driver wrote it.
public enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number and its source text.
    case number(Double, text: String)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a, _), .number(let b, _)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.map(\.0) == b.map(\.0) && a.map(\.1) == b.map(\.1)
        default: false
        }
    }

    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.0 == key }?.1
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var double: Double? { if case .number(let d, _) = self { d } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    /// Parses one JSON text; the error says where and what went wrong.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 32) throws(JSONError) -> JSON {
        var parser = Parser(bytes: bytes, maxDepth: maxDepth)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    public static func parse(_ text: String) throws(JSONError) -> JSON {
        var text = text
        do {
            return try text.withUTF8 { buffer in try parse(UnsafeRawBufferPointer(buffer)) }
        } catch let error as JSONError {
            throw error
        } catch {
            throw JSONError(message: "\(error)", offset: 0)
        }
    }
}

public struct JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public let offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}

private struct Parser {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var index = 0

    func error(_ message: String) -> JSONError { JSONError(message: message, offset: index) }

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    mutating func value(depth: Int) throws(JSONError) -> JSON {
        guard depth <= maxDepth else { throw error("nested deeper than \(maxDepth)") }
        guard let byte = peek else { throw error("unexpected end of JSON") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of JSON") }
        for i in 0..<count where bytes[index + i] != word.utf8Start[i] { throw error("invalid literal") }
        index += count
    }

    mutating func object(depth: Int) throws(JSONError) -> JSON {
        index += 1
        var members = [(String, JSON)]()
        skipSpace()
        if peek == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipSpace()
            guard peek == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try string()
            skipSpace()
            guard peek == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipSpace()
            members.append((key, try value(depth: depth + 1)))
            skipSpace()
            switch peek {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    mutating func array(depth: Int) throws(JSONError) -> JSON {
        index += 1
        var elements = [JSON]()
        skipSpace()
        if peek == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipSpace()
            elements.append(try value(depth: depth + 1))
            skipSpace()
            switch peek {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    mutating func number() throws(JSONError) -> JSON {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, first >= 0x30 && first <= 0x39 else { throw error("invalid number") }
        if first == 0x30 { index += 1 } else { digits() }
        if peek == UInt8(ascii: ".") {
            index += 1
            guard let d = peek, d >= 0x30 && d <= 0x39 else { throw error("invalid number") }
            digits()
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard let d = peek, d >= 0x30 && d <= 0x39 else { throw error("invalid number") }
            digits()
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text) else { throw error("invalid number") }
        return .number(value, text: text)
    }

    mutating func digits() {
        while let d = peek, d >= 0x30 && d <= 0x39 { index += 1 }
    }

    mutating func string() throws(JSONError) -> String {
        index += 1
        var out = [UInt8]()
        while true {
            guard let byte = peek else { throw error("unterminated string") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escape = peek else { throw error("unterminated string") }
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard peek == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("lone surrogate in string")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate in string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("lone surrogate in string")
                    }
                    out += String(Character(Unicode.Scalar(scalar)!)).utf8
                default:
                    throw error("invalid escape")
                }
            case 0x00..<0x20:
                throw error("control character in string")
            default:
                out.append(byte)
            }
        }
    }

    mutating func hex4() throws(JSONError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            index += 1
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - 0x41 + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
        }
        return value
    }
}
