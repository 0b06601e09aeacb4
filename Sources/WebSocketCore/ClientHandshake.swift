import HTTP1
/// The client side of the opening handshake (RFC 6455 §4.1): the request to send and
/// the checks on the server's answer.
public struct ClientHandshake: Sendable {
    public let host: String
    public let target: String
    public let key: String
    public let protocols: [String]
    /// The permessage-deflate offer, if any.
    public let deflateOffer: PerMessageDeflate?

    /// What the server agreed to.
    public struct Agreement: Sendable, Equatable {
        public var subprotocol: String?
        public var deflate: PerMessageDeflate?
    }

    /// - Parameter key: 16 random bytes in base64; a fresh one by default.
    public init(host: String, target: String, protocols: [String] = [], deflate: PerMessageDeflate? = nil, key: String? = nil) {
        self.host = host
        self.target = target
        self.protocols = protocols
        self.deflateOffer = deflate
        self.key = key ?? Base64.encode(Entropy.bytes(16))
    }

    /// The upgrade request, written straight into one array.
    public var requestBytes: [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(160 + target.utf8.count + host.utf8.count + protocols.reduce(0) { $0 + $1.utf8.count + 2 })
        func append(_ text: String) { bytes.appendUTF8(text) }
        append("GET ")
        append(target)
        append(" HTTP/1.1\r\nHost: ")
        append(host)
        append("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ")
        append(key)
        append("\r\nSec-WebSocket-Version: 13\r\n")
        if !protocols.isEmpty {
            append("Sec-WebSocket-Protocol: ")
            for (index, name) in protocols.enumerated() {
                if index > 0 { append(", ") }
                append(name)
            }
            append("\r\n")
        }
        if let deflateOffer {
            append("Sec-WebSocket-Extensions: ")
            append(deflateOffer.offerHeaderValue())
            append("\r\n")
        }
        append("\r\n")
        return bytes
    }

    /// Checks the server's answer (§4.1, client steps 1–6).
    public func validate(_ response: HTTPResponseHead) -> Result<Agreement, ClientHandshakeError> {
        guard response.status == 101 else { return .failure(.refused(status: response.status, reason: response.reason)) }
        guard response.hasToken(.upgrade, "websocket"), response.hasToken(.connection, "upgrade") else {
            return .failure(.invalid("missing Upgrade: websocket or Connection: Upgrade"))
        }
        guard response.value(.secWebSocketAccept) == ServerHandshake.acceptValue(for: key) else {
            return .failure(.invalid("wrong Sec-WebSocket-Accept"))
        }
        var agreement = Agreement()
        if let chosen = response.value(.secWebSocketProtocol) {
            guard protocols.contains(chosen) else { return .failure(.invalid("server chose unoffered subprotocol \(chosen)")) }
            agreement.subprotocol = chosen
        }
        guard let extensions = ExtensionOffer.parse(response.values(.secWebSocketExtensions)) else {
            return .failure(.invalid("malformed Sec-WebSocket-Extensions"))
        }
        for offer in extensions {
            guard let deflateOffer, agreement.deflate == nil,
                  let accepted = PerMessageDeflate.accept(response: offer, offered: deflateOffer, offeredClientWindow: true)
            else { return .failure(.invalid("server answered with an extension we cannot accept: \(offer.headerValue)")) }
            agreement.deflate = accepted
        }
        return .success(agreement)
    }
}

/// Why a client handshake failed.
public enum ClientHandshakeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server answered with another status than 101 (and this reason phrase).
    case refused(status: Int, reason: String)
    /// The 101 answer broke a rule of §4.1.
    case invalid(String)

    public var description: String {
        switch self {
        case .refused(let status, let reason): "HTTP \(status)" + (reason.isEmpty ? "" : " \(reason)")
        case .invalid(let rule): rule
        }
    }
}

/// A parsed HTTP/1.1 response head.
public struct HTTPResponseHead: Sendable, Equatable {
    public var status: Int
    public var reason: String
    /// The header fields in arrival order.
    public var fields: HTTPFields

    public init(status: Int, reason: String, fields: HTTPFields) {
        self.status = status
        self.reason = reason
        self.fields = fields
    }

    public init(status: Int, reason: String, headers: [(name: String, value: String)]) {
        self.init(status: status, reason: reason, fields: HTTPFields(headers))
    }

    /// Header fields as name–value pairs in arrival order, names as sent.
    public var headers: [(name: String, value: String)] {
        get { fields.pairs }
        set { fields = HTTPFields(newValue) }
    }

    public func values(_ name: HTTPFieldName) -> [String] { fields.values(name) }

    /// The first value of a header.
    public func value(_ name: HTTPFieldName) -> String? { values(name).first }

    public func tokens(_ name: HTTPFieldName) -> [String] { fields.tokens(name) }

    /// Whether a comma-separated header lists `token`, in any ASCII case; allocates nothing.
    public func hasToken(_ name: HTTPFieldName, _ token: String) -> Bool { fields.hasToken(name, token) }

    /// What a refusal says: its body's first bytes among `bytes` (what came after the head),
    /// at most `limit` and no more than `Content-Length` gives (a missing, negative or
    /// malformed length gives none), trailing whitespace trimmed. Text from the network:
    /// show it through `SafeText`.
    public func message(in bytes: ArraySlice<UInt8>, limit: Int = 1024) -> String {
        let length = value("Content-Length").flatMap { Int($0) } ?? 0
        var message = String(decoding: bytes.prefix(max(0, min(length, limit))), as: UTF8.self)
        while let last = message.last, last.isWhitespace { message.removeLast() }
        return message
    }

    /// Where the first CRLF CRLF at or after `start` begins: the end of a head that arrives in
    /// pieces is searched from where the last search stopped (`count - 3`), not from byte 0.
    public static func end(in bytes: [UInt8], from start: Int = 0) -> Int? {
        guard bytes.count >= start + 4 else { return nil }
        for i in start...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// Parses a complete head (status line and fields, without the blank line). Lines end
    /// in CRLF; the status line is `HTTP/1.x SP 3DIGIT [SP reason]`.
    public static func parse(_ head: [UInt8]) -> HTTPResponseHead? {
        var statusEnd = 0
        while statusEnd < head.count && !(head[statusEnd] == 13 && statusEnd + 1 < head.count && head[statusEnd + 1] == 10) { statusEnd += 1 }
        let statusLine = head[0..<statusEnd]
        guard statusLine.count >= 12, statusLine.starts(with: "HTTP/1.".utf8), statusLine[8] == UInt8(ascii: " ") else { return nil }
        let digits = statusLine[9..<12]
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              statusLine.count == 12 || statusLine[12] == UInt8(ascii: " ") else { return nil }
        let code = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        let reason = statusLine.count > 13 ? String(decoding: statusLine[13...], as: UTF8.self) : ""
        var fields = [HTTPFields.Field]()
        var lineStart = statusEnd + 2
        while lineStart <= head.count && statusEnd < head.count {
            var lineEnd = lineStart
            while lineEnd < head.count && !(head[lineEnd] == 13 && lineEnd + 1 < head.count && head[lineEnd + 1] == 10) { lineEnd += 1 }
            guard let colon = head[lineStart..<lineEnd].firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let field = head.withUnsafeBufferPointer { HTTPFields.Field(name: lineStart..<colon, value: HTTPFields.trimmingOWS((colon + 1)..<lineEnd, in: $0), in: $0) }
            fields.append(field)
            lineStart = lineEnd + 2
        }
        return HTTPResponseHead(status: code, reason: reason, fields: HTTPFields(bytes: head, fields: fields))
    }
}
