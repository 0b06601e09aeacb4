/// Which browser pages may open a WebSocket here (cross-site WebSocket hijacking, RFC 6455
/// §10.2): a browser sends the page's `Origin` with every upgrade, and a page from another
/// site could otherwise act in a room through its visitors' browsers. Clients that send no
/// `Origin` (terminals, scripts) are not browsers and are accepted; so are pages served by this
/// server (same origin: the Origin's host and port are the `Host` the request was sent to);
/// any other origin only when `origins` lists it exactly, or `origins` holds `*`.
package struct OriginPolicy: Sendable {
    /// Origins allowed beside the server's own, as browsers write them (`https://app.example`).
    package let allowed: Set<String>

    package init(allowed: [String]) {
        self.allowed = Set(allowed.map { $0.lowercased() })
    }

    /// Nil when the request may go on, else why it is refused (403).
    package func refusal(origin: String?, host: String?) -> String? {
        guard let origin else { return nil }
        let lowered = origin.lowercased()
        if allowed.contains("*") || allowed.contains(lowered) { return nil }
        if let host, Self.isSameOrigin(lowered, host: host.lowercased()) { return nil }
        return "origin \(origin.prefix(200)) is not allowed here: only pages of this server and the origins listed in `origins` may connect"
    }

    /// Whether `origin` (`scheme://host[:port]`) names `host` (a Host header: `host[:port]`),
    /// a port left out on either side being the scheme's default.
    package static func isSameOrigin(_ origin: String, host: String) -> Bool {
        let defaults = ["http": "80", "https": "443", "ws": "80", "wss": "443"]
        guard let schemeEnd = origin.firstRange(of: "://"), let defaultPort = defaults[String(origin[..<schemeEnd.lowerBound])] else { return false }
        let authority = origin[schemeEnd.upperBound...]
        guard !authority.isEmpty, !authority.contains("/"), !authority.contains("@") else { return false }
        func split(_ text: Substring) -> (host: Substring, port: Substring?) {
            // [v6]:port, host:port, or no port.
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                let rest = text[text.index(after: close)...]
                return (text[...close], rest.hasPrefix(":") ? rest.dropFirst() : nil)
            }
            guard let colon = text.lastIndex(of: ":") else { return (text, nil) }
            return (text[..<colon], text[text.index(after: colon)...])
        }
        let (originHost, originPort) = split(authority)
        let (requestHost, requestPort) = split(host[...])
        guard originHost == requestHost else { return false }
        let left = originPort ?? Substring(defaultPort)
        // A Host without a port: the client used the default port of its scheme, which the
        // origin's scheme tells (a proxy in front that ends TLS: https → Host without :443).
        return requestPort.map { $0 == left } ?? (left == Substring(defaultPort))
    }
}
