/// A `ws://` or `wss://` URL, split into what a connection needs.
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    public var secure: Bool
    public var host: String
    public var port: Int
    /// Path and query as sent in the request line, e.g. `/rooms/demo?role=presenter`: every
    /// byte a request-target cannot hold (RFC 3986: spaces, controls, non-ASCII, `"<>\^`{|}#`)
    /// is percent-encoded, so no text can end the request line or add a header.
    public private(set) var target: String

    /// Parses `ws://host[:port]/path?query` or `wss://…`; IPv6 hosts in brackets.
    public init?(_ text: String) {
        guard case .success(let url) = Self.parse(text) else { return nil }
        self = url
    }

    /// The same parse; the error says what is wrong, in words for the person who typed it.
    public init(parsing text: String) throws(Problem) {
        self = try Self.parse(text).get()
    }

    /// Why a text is not a WebSocket URL.
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    private init(secure: Bool, host: String, port: Int, target: String) {
        self.secure = secure
        self.host = host
        self.port = port
        self.target = target
    }

    private static func parse(_ text: String) -> Result<WebSocketURL, Problem> {
        let secure: Bool
        let rest: Substring
        if text.hasPrefix("ws://") {
            secure = false
            rest = text.dropFirst(5)
        } else if text.hasPrefix("wss://") {
            secure = true
            rest = text.dropFirst(6)
        } else {
            return .failure(Problem("a WebSocket URL starts with ws:// or wss://"))
        }
        if rest.contains("#") { return .failure(Problem("a WebSocket URL has no #fragment (RFC 6455 §3): write # as %23")) }
        let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var authority = rest[..<slash]
        let path = rest[slash...]
        let target = percentEncoded(path.isEmpty ? "/" : path.hasPrefix("?") ? "/" + path : path, keeping: targetCharacters)
        let host: String
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(Problem("an IPv6 address in brackets needs its closing ]")) }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                return .failure(Problem("only a :PORT may follow the ] of an IPv6 address"))
            }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                portText = authority[authority.index(after: colon)...]
                authority = authority[..<colon]
            }
            host = String(authority)
        }
        // A bracketed host is an IPv6 literal; any other host is a name or IPv4 address. So that
        // `description` parses back to the same URL, neither may hold what delimits them.
        let bracketed = authority.hasPrefix("[")
        guard !host.isEmpty else { return .failure(Problem("the URL names no host")) }
        if !bracketed, !host.unicodeScalars.allSatisfy(\.isASCII) {
            return .failure(Problem("the host must be ASCII: write an internationalised name in its punycode form (xn--…)"))
        }
        guard host.unicodeScalars.allSatisfy({ isHostScalar($0, bracketed: bracketed) }) else {
            return .failure(Problem(bracketed ? "not an IPv6 address in brackets" : "the host holds a character a host name cannot (a space, control, or one of : [ ] @ / ? # \\)"))
        }
        guard !bracketed || host.contains(":") else { return .failure(Problem("not an IPv6 address in brackets")) }
        var port = secure ? 443 : 80
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else { return .failure(Problem("the port must be a number from 1 to 65535")) }
            port = number
        }
        return .success(WebSocketURL(secure: secure, host: host, port: port, target: target))
    }

    private static func isHostScalar(_ scalar: Unicode.Scalar, bracketed: Bool) -> Bool {
        if bracketed { return scalar.isASCII && (scalar.properties.isAlphabetic || scalar.properties.numericType != nil || ":.%-_".unicodeScalars.contains(scalar)) }
        // Host names are ASCII (an internationalised name goes in its punycode form): a
        // non-ASCII scalar could join the "/" after it into one character and change the parse.
        switch scalar {
        case ":", "[", "]", "@", "/", "?", "#", "\\": return false
        default: return scalar.value > 0x20 && scalar.value < 0x7F
        }
    }

    /// The `Host` header value.
    public var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// The same server with another target (percent-encoded as `target` says).
    public func with(target: String) -> WebSocketURL {
        var copy = self
        copy.target = Self.percentEncoded(target, keeping: Self.targetCharacters)
        return copy
    }

    /// What a request target keeps as it is besides the unreserved characters: RFC 3986's
    /// sub-delims, `: @ / ?`, and `%`, so that encoding twice changes nothing.
    static let targetCharacters = "!$&'()*+,;=:@/?%"

    /// `text` with every byte but RFC 3986's unreserved characters (`A–Z a–z 0–9 - . _ ~`) and
    /// those in `kept` percent-encoded, e.g. a query value with nothing kept.
    public static func percentEncoded(_ text: some StringProtocol, keeping kept: String = "") -> String {
        func keeps(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            default: "-._~".utf8.contains(byte) || kept.utf8.contains(byte)
            }
        }
        guard !text.utf8.allSatisfy(keeps) else { return String(text) }
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in text.utf8 {
            if keeps(byte) { out.append(byte) } else { out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]] }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { "\(secure ? "wss" : "ws")://\(hostHeader)\(target)" }

    /// The URL as it may be shown or logged: the value of every secret query parameter (a
    /// presenter `key`, a `followKey`, a `token`) replaced by `***`.
    public var redacted: String { rewritingSecrets { $0 + "=***" } }

    /// The URL without its keys, follow keys and tokens (for a recording's header).
    public var withoutSecrets: String { rewritingSecrets { _ in nil } }

    /// The URL with each secret query parameter (`secretQueryParameters`) as `rewrite` gives
    /// it from its name (nil: left out).
    private func rewritingSecrets(_ rewrite: (String) -> String?) -> String {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return description }
        let query = parts[1].split(separator: "&", omittingEmptySubsequences: false).compactMap { pair -> String? in
            let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return QueryText.secretName(name[...]).map(rewrite) ?? String(pair)
        }
        return "\(secure ? "wss" : "ws")://\(hostHeader)\(parts[0])" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }
}
