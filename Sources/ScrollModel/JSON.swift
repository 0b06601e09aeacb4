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

/// Writes compact JSON into a byte array: objects keep the order members are written in.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")) }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")) }
    public mutating func beginArray() { separator(); bytes.append(UInt8(ascii: "[")) }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")) }

    /// Writes any JSON value (numbers as their source text).
    public mutating func value(_ value: JSON) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(_, let text): raw(text)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let members):
            beginObject()
            for (name, member) in members { key(text: name); self.value(member) }
            endObject()
        }
    }

    /// A member name made at run time (escaped as any string).
    public mutating func key(text name: String) { appendString(name, separated: true, colon: true) }

    public mutating func string(_ value: String) { appendString(value, separated: true, colon: false) }
    /// A session id as its 16 hex digits, quoted (as `string(id.description)`, without the String).
    public mutating func string(_ id: SessionID) {
        separator()
        write(18) { out in
            out[0] = UInt8(ascii: "\"")
            writeHex16(id.value, into: out + 1)
            out[17] = UInt8(ascii: "\"")
        }
    }
    public mutating func bool(_ value: Bool) { separator(); append(value ? "true" : "false") }
    public mutating func null() { separator(); append("null") }
    public mutating func int(_ value: Int) { separator(); appendDecimal(value) }
    /// Writes a number as given (e.g. the driver's own text for `t`).
    public mutating func raw(_ text: String) { separator(); bytes += text.utf8 }

    /// Writes a finite double in its shortest round-trip form; integral values without ".0".
    public mutating func double(_ value: Double) {
        separator()
        if value == value.rounded(), abs(value) < 1e15 { appendDecimal(Int(value)) } else { bytes += "\(value)".utf8 }
    }

    /// JSON text known when the program is built, appended as it is (no comma is added): for
    /// a message whose shape is fixed, several members' punctuation and names in one copy,
    /// e.g. `fragment(#","room":"#)` before the room's name. The writer adds commas from
    /// the last byte written, so what follows a fragment ending in `:` gets none.
    public mutating func fragment(_ text: StaticString) { append(text) }

    /// A member name known when the program is built (ASCII, nothing to escape): written
    /// without looking at it.
    public mutating func key(_ name: StaticString) {
        writeQuoted(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), separated: true, colon: true)
    }

    public mutating func field(_ name: StaticString, _ value: String) { key(name); string(value) }
    public mutating func field(_ name: StaticString, _ value: Int) { key(name); int(value) }
    public mutating func field(_ name: StaticString, _ value: Double) { key(name); double(value) }
    public mutating func field(_ name: StaticString, _ value: Bool) { key(name); bool(value) }

    /// `"name":{"id":…,"fraction":…}`.
    public mutating func field(_ name: StaticString, _ anchor: Anchor) {
        key(name)
        beginObject()
        field("id", anchor.id)
        field("fraction", anchor.fraction)
        endObject()
    }

    /// Appends `count` bytes that `body` writes from the pointer it is given: one capacity
    /// and uniqueness check for a whole piece instead of one per byte.
    @inline(__always)
    private mutating func write(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Void) {
        bytes.append(addingCapacity: count) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                body(buffer.baseAddress! + initialized)
                initialized += count
            }
        }
    }

    private mutating func append(_ text: StaticString) {
        write(text.utf8CodeUnitCount) { $0.update(from: text.utf8Start, count: text.utf8CodeUnitCount) }
    }

    /// Writes `value`'s decimal digits (as `String(value)` would, without making the string).
    private mutating func appendDecimal(_ value: Int) {
        var magnitude = value.magnitude
        var digits = 1
        var scale: UInt = 10
        while digits < 20 && magnitude >= scale {
            digits += 1
            scale = scale &* 10
        }
        let sign = value < 0 ? 1 : 0
        write(sign + digits) { out in
            if sign == 1 { out[0] = UInt8(ascii: "-") }
            var index = sign + digits
            repeat {
                index -= 1
                out[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
        }
    }

    /// A comma goes before every value or key except the first of an object or array (the
    /// last byte written is then `{` or `[`) and a member's value (after its `:`).
    private mutating func separator() {
        if needsSeparator { bytes.append(UInt8(ascii: ",")) }
    }

    private var needsSeparator: Bool {
        guard let last = bytes.last else { return false }
        return last != UInt8(ascii: "{") && last != UInt8(ascii: "[") && last != UInt8(ascii: ":")
    }

    /// Writes `utf8` (nothing in it to escape) quoted, in one piece with the comma it needs
    /// (`separated`) and, for a key, the colon after it.
    private mutating func writeQuoted(_ utf8: UnsafeBufferPointer<UInt8>, separated: Bool, colon: Bool) {
        let comma = separated && needsSeparator ? 1 : 0
        write(comma + utf8.count + 2 + (colon ? 1 : 0)) { out in
            if comma == 1 { out[0] = UInt8(ascii: ",") }
            out[comma] = UInt8(ascii: "\"")
            if let start = utf8.baseAddress { (out + comma + 1).update(from: start, count: utf8.count) }
            out[comma + 1 + utf8.count] = UInt8(ascii: "\"")
            if colon { out[comma + 2 + utf8.count] = UInt8(ascii: ":") }
        }
    }

    /// Appends `value` quoted, escaping what JSON requires and, as `\uXXXX`, what a terminal
    /// could act on (DEL, the C1 controls, the bidirectional overrides and isolates), so
    /// JSON printed to a terminal stays text; runs without escapes are copied whole.
    /// With `separated`, the comma it needs goes first; with `colon`, a `:` after (a key).
    private mutating func appendString(_ value: String, separated: Bool, colon: Bool) {
        // Most strings (keys, names, IDs) are native, printable ASCII without `"` or `\`:
        // one write from where the string keeps its bytes.
        let plain: Bool? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            guard Self.isPlain(utf8) else { return false }
            writeQuoted(utf8, separated: separated, colon: colon)
            return true
        }
        if plain == true { return }
        var value = value
        value.withUTF8 { utf8 in
            if plain == nil, Self.isPlain(utf8) {
                writeQuoted(utf8, separated: separated, colon: colon)
                return
            }
            if separated { separator() }
            bytes.append(UInt8(ascii: "\""))
            var runStart = 0
            var index = 0
            let count = utf8.count
            while index < count {
                let byte = utf8[index]
                let length: Int  // UTF-8 bytes of the scalar to escape
                switch byte {
                case 0..<0x20, 0x22, 0x5C, 0x7F: length = 1
                case 0xC2 where index + 1 < count && (0x80...0x9F).contains(utf8[index + 1]): length = 2  // C1
                case 0xE2 where index + 2 < count && Self.isBidiControl(utf8[index + 1], utf8[index + 2]): length = 3
                default:
                    index += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                switch byte {
                case UInt8(ascii: "\""): bytes += [0x5C, 0x22]
                case UInt8(ascii: "\\"): bytes += [0x5C, 0x5C]
                case 0x0A: bytes += [0x5C, UInt8(ascii: "n")]
                case 0x0D: bytes += [0x5C, UInt8(ascii: "r")]
                case 0x09: bytes += [0x5C, UInt8(ascii: "t")]
                default:
                    let scalar = switch length {
                    case 1: Int(byte)
                    case 2: Int(byte & 0x1F) << 6 | Int(utf8[index + 1] & 0x3F)
                    default: Int(byte & 0x0F) << 12 | Int(utf8[index + 1] & 0x3F) << 6 | Int(utf8[index + 2] & 0x3F)
                    }
                    let hex = Array("0123456789abcdef".utf8)
                    bytes += [0x5C, UInt8(ascii: "u"), hex[scalar >> 12], hex[scalar >> 8 & 15], hex[scalar >> 4 & 15], hex[scalar & 15]]
                }
                index += length
                runStart = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            bytes.append(UInt8(ascii: "\""))
            if colon { bytes.append(UInt8(ascii: ":")) }
        }
    }

    /// Printable ASCII without `"` or `\`: written as it is.
    private static func isPlain(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in utf8 where byte &- 0x20 >= 0x5F || byte == 0x22 || byte == 0x5C { return false }
        return true
    }

    /// Whether E2 `second` `third` is U+202A–U+202E or U+2066–U+2069.
    private static func isBidiControl(_ second: UInt8, _ third: UInt8) -> Bool {
        (second == 0x80 && (0xAA...0xAE).contains(third)) || (second == 0x81 && (0xA6...0xA9).contains(third))
    }
}
