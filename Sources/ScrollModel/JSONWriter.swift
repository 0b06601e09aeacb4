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
