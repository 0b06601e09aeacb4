/// A parsed HTTP/1.1 request head (RFC 9112 §2–5). The body, if any, is not read.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent, e.g. `/rooms/demo?role=presenter`.
    public var target: String
    /// The minor version of HTTP/1.x.
    public var minorVersion: Int
    /// Header fields in arrival order, names as sent.
    public var headers: [(name: String, value: String)]

    public init(method: String, target: String, minorVersion: Int = 1, headers: [(name: String, value: String)]) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
    }

    /// The path part of the target, without the query. An absolute-form target
    /// (`http://host:port/path`, RFC 9112 §3.2.2; RFC 6455 §4.2.1) gives the path in it.
    public var path: Substring {
        var rest = Substring(target)
        if !rest.hasPrefix("/"), let scheme = rest.firstRange(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(where: { $0 == "/" || $0 == "?" }).map { rest[$0...] } ?? ""
            if !rest.hasPrefix("/") { return "/" }
        }
        return rest.firstIndex(of: "?").map { rest[..<$0] } ?? rest
    }

    /// The query part of the target, without `?`; empty when there is none.
    public var query: Substring {
        guard let mark = target.firstIndex(of: "?") else { return "" }
        return target[target.index(after: mark)...]
    }

    /// All values of a header, case-insensitively by name.
    public func values(_ name: String) -> [String] { HeaderFields.values(headers, name) }

    /// The single value of a header, or the comma-joined values when it repeats (RFC 9110 §5.3).
    public func value(_ name: String) -> String? {
        let all = values(name)
        return all.isEmpty ? nil : all.joined(separator: ", ")
    }

    /// The comma-separated tokens of a header, trimmed and lower-cased (e.g. `Connection`).
    public func tokens(_ name: String) -> [String] { HeaderFields.tokens(headers, name) }

    /// Whether a comma-separated header (e.g. `Connection`) lists `token`, compared in any
    /// ASCII case; allocates nothing.
    public func hasToken(_ name: String, _ token: String) -> Bool { HeaderFields.hasToken(headers, name, token) }

    /// Whether the header is present at all.
    public func hasField(_ name: String) -> Bool { headers.contains { HeaderFields.sameName($0.name, name) } }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.minorVersion == rhs.minorVersion
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// Header-field lookups shared by requests and responses.
enum HeaderFields {
    typealias Fields = [(name: String, value: String)]

    /// All values of a field, its name matched in any ASCII case.
    static func values(_ fields: Fields, _ name: String) -> [String] {
        var found = [String]()
        for field in fields where sameName(field.name, name) { found.append(field.value) }
        return found
    }

    /// The comma-separated list elements of a field, trimmed and lower-cased; empty elements
    /// are ignored (RFC 9110 §5.6.1).
    static func tokens(_ fields: Fields, _ name: String) -> [String] {
        values(fields, name).flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS().lowercased() }.filter { !$0.isEmpty }
    }

    /// Whether a field's comma-separated list elements include `token` (as `tokens` would
    /// give it), without building the list.
    static func hasToken(_ fields: Fields, _ name: String, _ token: String) -> Bool {
        fields.contains { field in sameName(field.name, name) && list(field.value, contains: token) }
    }

    /// Compares field names as HTTP does (ASCII letters in either case), without copying.
    static func sameName(_ a: String, _ b: String) -> Bool { sameLetters(a.utf8, b.utf8) }

    private static func sameLetters(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x ^ y == 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
        }
    }

    /// Whether a comma-separated list value has `token` as an element (trimmed of spaces
    /// and tabs, compared in any ASCII case), without copying.
    private static func list(_ value: String, contains token: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            var start = 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: ",") { end += 1 }
                var low = start
                var high = end
                while low < high && (bytes[low] == 0x20 || bytes[low] == 0x09) { low += 1 }
                while high > low && (bytes[high - 1] == 0x20 || bytes[high - 1] == 0x09) { high -= 1 }
                if sameLetters(bytes[low..<high], token.utf8) { return true }
                start = end + 1
            }
            return false
        }
    }
}

extension StringProtocol {
    /// Drops leading and trailing spaces and tabs (HTTP optional whitespace).
    func trimmingOWS() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
