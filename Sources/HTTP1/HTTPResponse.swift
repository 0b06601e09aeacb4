import TextSafety
/// An HTTP/1.1 response head and a small body, serialized with `bytes`.
public struct HTTPResponse: Sendable, Equatable {
    public let status: Int
    /// The status line's reason phrase, which goes with `status` (neither changes once made).
    public let reason: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The answer to a HEAD request: the head as for GET (Content-Length included), no body.
    public var omitsBody = false

    public init(status: Int, reason: String? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason ?? HTTPResponse.standardReason(status)
        self.headers = headers
        self.body = body
    }

    /// A plain-text error answer that closes the connection; `message` says what was wrong.
    /// The message may quote what the client sent: its control characters are shown as
    /// pictures (`SafeText`), so a body never carries an escape sequence to a terminal.
    public static func error(_ status: Int, _ message: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: headers + [("Content-Type", "text/plain; charset=utf-8"), ("Connection", "close")],
            body: Array((SafeText.display(message) + "\n").utf8))
    }

    public var isUpgrade: Bool { status == 101 }

    public func value(_ name: String) -> String? {
        headers.first { HTTPFields.sameName($0.name, name) }?.value
    }

    /// The response as it goes on the wire. Non-101 responses carry Content-Length.
    public var bytes: [UInt8] {
        // Measured first, then written into one array: a handshake's answer is one
        // allocation and one copy per piece.
        let status = String(self.status)
        let length = isUpgrade ? nil : String(body.count)
        let body = omitsBody ? [] : self.body
        var size = "HTTP/1.1 ".utf8.count + status.utf8.count + 1 + reason.utf8.count + 2 + 2 + body.count
        for (name, value) in headers { size += name.utf8.count + 2 + value.utf8.count + 2 }
        if let length { size += "Content-Length: ".utf8.count + length.utf8.count + 2 }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var out = ByteCursor(buffer)
            out.put("HTTP/1.1 " as StaticString)
            out.put(status)
            out.put(" " as StaticString)
            out.put(reason)
            out.put("\r\n" as StaticString)
            for (name, value) in headers {
                out.put(name)
                out.put(": " as StaticString)
                out.put(value)
                out.put("\r\n" as StaticString)
            }
            if let length {
                out.put("Content-Length: " as StaticString)
                out.put(length)
                out.put("\r\n" as StaticString)
            }
            out.put("\r\n" as StaticString)
            body.withUnsafeBytes { out.put($0) }
            count = out.count
        }
    }

    static func standardReason(_ status: Int) -> String {
        switch status {
        case 101: "Switching Protocols"
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }

    public static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool { lhs.bytes == rhs.bytes }
}

extension Array where Element == UInt8 {
    /// Appends a string's UTF-8 bytes in one copy.
    package mutating func appendUTF8(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}
