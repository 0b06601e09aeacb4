/// The header fields of a request or response head, kept as they arrived: the head's
/// bytes and, for each field, where its name and its value (without the optional
/// whitespace around it) lie in them, and which of the recognised names it has
/// (`HTTPFieldName`). Lookups compare bytes, so a handshake is checked without a String per
/// field; only the values asked for become Strings.
public struct HTTPFields: Sendable, Equatable {
    /// Where one field's name and value lie in `bytes`.
    package struct Field: Sendable {
        var nameStart: Int32
        var nameEnd: Int32
        var valueStart: Int32
        var valueEnd: Int32
        /// `HTTPFieldName.code` of the name, or 0.
        var code: UInt8

        init(name: Range<Int>, value: Range<Int>, code: UInt8) {
            nameStart = Int32(name.lowerBound)
            nameEnd = Int32(name.upperBound)
            valueStart = Int32(value.lowerBound)
            valueEnd = Int32(value.upperBound)
            self.code = code
        }

        /// A field whose name lies at `name` in `bytes`, recognised there.
        package init(name: Range<Int>, value: Range<Int>, in bytes: UnsafeBufferPointer<UInt8>) {
            self.init(name: name, value: value, code: HTTPFieldName.code(of: UnsafeBufferPointer(rebasing: bytes[name])))
        }
    }

    private let bytes: [UInt8]
    private let fields: [Field]

    /// Fields found by a parser in `bytes` (which may hold more than the fields), their
    /// names recognised as they were found.
    package init(bytes: [UInt8], fields: [Field]) {
        self.bytes = bytes
        self.fields = fields
    }

    /// Fields from name–value pairs, in this order.
    public init(_ pairs: [(name: String, value: String)]) {
        var bytes = [UInt8]()
        var fields = [Field]()
        fields.reserveCapacity(pairs.count)
        for (name, value) in pairs {
            let nameStart = bytes.count
            bytes += name.utf8
            let valueStart = bytes.count
            bytes += value.utf8
            fields.append(Field(name: nameStart..<valueStart, value: valueStart..<bytes.count, code: HTTPFieldName(name).code))
        }
        self.init(bytes: bytes, fields: fields)
    }

    /// How many fields there are (a repeated name counts each time).
    public var count: Int { fields.count }

    /// The fields as name–value pairs in arrival order, names as sent.
    public var pairs: [(name: String, value: String)] {
        fields.map { (string(Int($0.nameStart)..<Int($0.nameEnd)), string(Int($0.valueStart)..<Int($0.valueEnd))) }
    }

    /// All values of the fields named `name` (in any ASCII case), in arrival order.
    public func values(_ name: HTTPFieldName) -> [String] {
        var found = [String]()
        forEachValue(named: name) { range, _ in found.append(string(range)); return true }
        return found
    }

    /// The value of the fields named `name`, comma-joined when it repeats (RFC 9110 §5.3);
    /// nil when there is none.
    public func joinedValue(_ name: HTTPFieldName) -> String? {
        var first: Range<Int>?
        var repeated = false
        forEachValue(named: name) { range, _ in
            if first == nil { first = range; return true }
            repeated = true
            return false
        }
        guard let first else { return nil }
        return repeated ? values(name).joined(separator: ", ") : string(first)
    }

    /// The value of the one field named `name`; nil when it is missing or repeated.
    public func single(_ name: HTTPFieldName) -> String? {
        withSingleValue(name) { String(decoding: $0, as: UTF8.self) }
    }

    /// `body` with the bytes of the one field named `name`; nil when it is missing or
    /// repeated. (No string is made: the handshake's checks read the request in place.)
    package func withSingleValue<R>(_ name: HTTPFieldName, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        var found: Range<Int>?
        var seen = 0
        forEachValue(named: name) { range, _ in
            found = range
            seen += 1
            return seen < 2
        }
        guard seen == 1, let found else { return nil }
        return bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[found])) }
    }

    /// How many fields are named `name`.
    public func count(of name: HTTPFieldName) -> Int {
        var seen = 0
        forEachValue(named: name) { _, _ in seen += 1; return true }
        return seen
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: HTTPFieldName) -> Bool {
        var seen = false
        forEachValue(named: name) { _, _ in seen = true; return false }
        return seen
    }

    /// The comma-separated list elements of the fields named `name`, trimmed and
    /// lower-cased; empty elements are ignored (RFC 9110 §5.6.1).
    public func tokens(_ name: HTTPFieldName) -> [String] {
        var found = [String]()
        forEachValue(named: name) { _, value in
            Self.forEachElement(of: value) { element in
                found.append(String(decoding: element, as: UTF8.self).lowercased())
                return true
            }
            return true
        }
        return found
    }

    /// Whether the fields named `name` list `token` as one of their comma-separated
    /// elements (as `tokens` gives them), without building the list.
    public func hasToken(_ name: HTTPFieldName, _ token: String) -> Bool {
        var token = token
        return token.withUTF8 { hasToken(name, token: $0) }
    }

    /// `hasToken` for a token known when compiling (the handshake's): no string to copy.
    package func hasToken(_ name: HTTPFieldName, letters token: StaticString) -> Bool {
        hasToken(name, token: UnsafeBufferPointer(start: token.utf8Start, count: token.utf8CodeUnitCount))
    }

    private func hasToken(_ name: HTTPFieldName, token: UnsafeBufferPointer<UInt8>) -> Bool {
        var found = false
        forEachValue(named: name) { _, value in
            Self.forEachElement(of: value) { element in
                found = Self.sameLetters(element, token)
                return !found
            }
            return !found
        }
        return found
    }

    public static func == (lhs: HTTPFields, rhs: HTTPFields) -> Bool {
        guard lhs.fields.count == rhs.fields.count else { return false }
        for (l, r) in zip(lhs.fields, rhs.fields) {
            guard lhs.bytes[Int(l.nameStart)..<Int(l.nameEnd)].elementsEqual(rhs.bytes[Int(r.nameStart)..<Int(r.nameEnd)]),
                  lhs.bytes[Int(l.valueStart)..<Int(l.valueEnd)].elementsEqual(rhs.bytes[Int(r.valueStart)..<Int(r.valueEnd)])
            else { return false }
        }
        return true
    }

    /// Compares field names as HTTP does (ASCII letters in either case), without copying.
    public static func sameName(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { a in b.withUTF8 { b in sameLetters(a, b) } }
    }

    // MARK: Internals

    private func string(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }

    /// Calls `body` with the range and bytes of each value of the fields named `name`,
    /// until it returns false.
    /// A recognised name is found by its code; any other by its letters, among the fields
    /// whose names were not recognised.
    private func forEachValue(named name: HTTPFieldName, _ body: (Range<Int>, UnsafeBufferPointer<UInt8>) -> Bool) {
        bytes.withUnsafeBufferPointer { all in
            if name.code != 0 {
                for field in fields where field.code == name.code {
                    let range = Int(field.valueStart)..<Int(field.valueEnd)
                    if !body(range, UnsafeBufferPointer(rebasing: all[range])) { return }
                }
                return
            }
            var text = name.text
            text.withUTF8 { wanted in
                for field in fields where field.code == 0 && Int(field.nameEnd - field.nameStart) == wanted.count {
                    let fieldName = UnsafeBufferPointer(rebasing: all[Int(field.nameStart)..<Int(field.nameEnd)])
                    guard Self.sameLetters(fieldName, wanted) else { continue }
                    let range = Int(field.valueStart)..<Int(field.valueEnd)
                    if !body(range, UnsafeBufferPointer(rebasing: all[range])) { return }
                }
            }
        }
    }

    /// Calls `body` with each non-empty element of a comma-separated list, trimmed of
    /// spaces and tabs, until it returns false.
    private static func forEachElement(of list: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        var start = 0
        while start <= list.count {
            var end = start
            while end < list.count && list[end] != UInt8(ascii: ",") { end += 1 }
            let element = trimmingOWS(start..<end, in: list)
            if !element.isEmpty && !body(UnsafeBufferPointer(rebasing: list[element])) { return }
            start = end + 1
        }
    }

    /// `range` without the spaces and tabs (HTTP's optional whitespace) at either end.
    package static func trimmingOWS<Bytes: RandomAccessCollection<UInt8>>(_ range: Range<Int>, in bytes: Bytes) -> Range<Int> where Bytes.Index == Int {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high && isOWS(bytes[low]) { low += 1 }
        while high > low && isOWS(bytes[high - 1]) { high -= 1 }
        return low..<high
    }

    private static func isOWS(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// Equal bytes, ASCII letters compared in either case.
    static func sameLetters(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count {
            let x = a[i]
            let y = b[i]
            guard x == y || (x ^ y == 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z")) else { return false }
        }
        return true
    }
}
