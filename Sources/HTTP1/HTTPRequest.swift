/// A parsed HTTP/1.1 request head (RFC 9112 §2–5). The body, if any, is not read.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent, e.g. `/rooms/demo?role=presenter`.
    public var target: String
    /// The minor version of HTTP/1.x.
    public var minorVersion: Int
    /// The header fields in arrival order.
    public var fields: HTTPFields

    public init(method: String, target: String, minorVersion: Int = 1, fields: HTTPFields) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.fields = fields
    }

    public init(method: String, target: String, minorVersion: Int = 1, headers: [(name: String, value: String)]) {
        self.init(method: method, target: target, minorVersion: minorVersion, fields: HTTPFields(headers))
    }

    /// Header fields as name–value pairs in arrival order, names as sent.
    public var headers: [(name: String, value: String)] { fields.pairs }

    /// The path part of the target, without the query. An absolute-form target
    /// (`http://host:port/path`, RFC 9112 §3.2.2; RFC 6455 §4.2.1) gives the path in it.
    public var path: Substring {
        let range = inTarget { bytes -> Range<Int>? in
            var start = 0
            if bytes.first != UInt8(ascii: "/"), let scheme = Self.firstIndex(of: "://", in: bytes) {
                guard let pathStart = bytes[(scheme + 3)...].firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }),
                      bytes[pathStart] == UInt8(ascii: "/")
                else { return nil }
                start = pathStart
            }
            return start..<(bytes[start...].firstIndex(of: UInt8(ascii: "?")) ?? bytes.count)
        }
        return range ?? "/"
    }

    /// The query part of the target, without `?`; empty when there is none.
    public var query: Substring {
        inTarget { bytes in bytes.firstIndex(of: UInt8(ascii: "?")).map { ($0 + 1)..<bytes.count } } ?? ""
    }

    /// The part of the target that `find` gives as byte offsets in its UTF-8 (searched as
    /// bytes, without `Character`s), or nil.
    private func inTarget(_ find: (UnsafeBufferPointer<UInt8>) -> Range<Int>?) -> Substring? {
        var target = self.target
        guard let range = target.withUTF8(find) else { return nil }
        let utf8 = target.utf8
        if range.lowerBound == 0 && range.upperBound == utf8.count { return target[...] }  // most paths: the whole target
        return Substring(utf8[utf8.index(utf8.startIndex, offsetBy: range.lowerBound)..<utf8.index(utf8.startIndex, offsetBy: range.upperBound)])
    }

    /// All values of a header, case-insensitively by name.
    public func values(_ name: HTTPFieldName) -> [String] { fields.values(name) }

    /// The single value of a header, or the comma-joined values when it repeats (RFC 9110 §5.3).
    public func value(_ name: HTTPFieldName) -> String? { fields.joinedValue(name) }

    /// The comma-separated tokens of a header, trimmed and lower-cased (e.g. `Connection`).
    public func tokens(_ name: HTTPFieldName) -> [String] { fields.tokens(name) }

    /// Whether a comma-separated header (e.g. `Connection`) lists `token`, compared in any
    /// ASCII case; allocates nothing.
    public func hasToken(_ name: HTTPFieldName, _ token: String) -> Bool { fields.hasToken(name, token) }

    /// Whether the request says it carries content: a Transfer-Encoding, or a Content-Length
    /// above 0 (the parser has refused an ambiguous one).
    public var hasContent: Bool {
        fields.contains(.transferEncoding) || fields.tokens(.contentLength).contains { $0.contains { $0 != "0" } }
    }

    /// Whether the header is present at all.
    public func hasField(_ name: HTTPFieldName) -> Bool { fields.contains(name) }

    private static func firstIndex(of needle: StaticString, in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        let needle = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
