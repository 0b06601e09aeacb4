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

    /// The upgrade request.
    public var requestBytes: [UInt8] {
        var text = "GET \(target) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        if !protocols.isEmpty { text += "Sec-WebSocket-Protocol: \(protocols.joined(separator: ", "))\r\n" }
        if let deflateOffer { text += "Sec-WebSocket-Extensions: \(deflateOffer.offerHeaderValue())\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// Checks the server's answer (§4.1, client steps 1–6).
    public func validate(_ response: HTTPResponseHead) -> Result<Agreement, ClientHandshakeError> {
        guard response.status == 101 else { return .failure(.refused(status: response.status, reason: response.reason)) }
        guard response.hasToken("Upgrade", "websocket"), response.hasToken("Connection", "upgrade") else {
            return .failure(.invalid("missing Upgrade: websocket or Connection: Upgrade"))
        }
        guard response.value("Sec-WebSocket-Accept") == ServerHandshake.acceptValue(for: key) else {
            return .failure(.invalid("wrong Sec-WebSocket-Accept"))
        }
        var agreement = Agreement()
        if let chosen = response.value("Sec-WebSocket-Protocol") {
            guard protocols.contains(chosen) else { return .failure(.invalid("server chose unoffered subprotocol \(chosen)")) }
            agreement.subprotocol = chosen
        }
        guard let extensions = ExtensionOffer.parse(response.values("Sec-WebSocket-Extensions")) else {
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
    public var headers: [(name: String, value: String)]

    public init(status: Int, reason: String, headers: [(name: String, value: String)]) {
        self.status = status
        self.reason = reason
        self.headers = headers
    }

    public func values(_ name: String) -> [String] { HeaderFields.values(headers, name) }

    public func value(_ name: String) -> String? { values(name).first }

    public func tokens(_ name: String) -> [String] { HeaderFields.tokens(headers, name) }

    /// Whether a comma-separated header lists `token`, in any ASCII case; allocates nothing.
    public func hasToken(_ name: String, _ token: String) -> Bool { HeaderFields.hasToken(headers, name, token) }

    /// Parses a complete head (status line and fields, without the blank line). Lines end
    /// in CRLF; the status line is `HTTP/1.x SP 3DIGIT [SP reason]`.
    public static func parse(_ head: [UInt8]) -> HTTPResponseHead? {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        var index = 0
        while index + 1 < head.count {
            if head[index] == 13 && head[index + 1] == 10 {
                lines.append(head[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        lines.append(head[lineStart...])
        let statusLine = lines.removeFirst()
        let prefix = Array("HTTP/1.".utf8)
        guard statusLine.count >= 12, statusLine.starts(with: prefix), statusLine[statusLine.startIndex + 8] == UInt8(ascii: " ") else { return nil }
        let codeStart = statusLine.startIndex + 9
        let digits = statusLine[codeStart..<codeStart + 3]
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              statusLine.count == 12 || statusLine[codeStart + 3] == UInt8(ascii: " ") else { return nil }
        let code = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        let reason = statusLine.count > 13 ? String(decoding: statusLine[(codeStart + 4)...], as: UTF8.self) : ""
        var headers = [(name: String, value: String)]()
        headers.reserveCapacity(lines.count)
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            headers.append((String(decoding: line[..<colon], as: UTF8.self), String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingOWS()))
        }
        return HTTPResponseHead(status: code, reason: reason, headers: headers)
    }

    public static func == (lhs: HTTPResponseHead, rhs: HTTPResponseHead) -> Bool {
        lhs.status == rhs.status && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}
