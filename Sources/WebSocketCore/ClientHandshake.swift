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
        guard response.status == 101 else { return .failure(.refused(status: response.status, body: response.reason)) }
        guard response.tokens("Upgrade").contains("websocket"), response.tokens("Connection").contains("upgrade") else {
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
public enum ClientHandshakeError: Error, Equatable, Sendable {
    /// The server answered with another status than 101.
    case refused(status: Int, body: String)
    /// The 101 answer broke a rule of §4.1.
    case invalid(String)
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

    /// Parses a complete head (status line and fields, without the blank line).
    public static func parse(_ head: [UInt8]) -> HTTPResponseHead? {
        // "\r\n" is a single Character in Swift.
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let status = lines[0].split(separator: " ", maxSplits: 2)
        guard status.count >= 2, status[0].hasPrefix("HTTP/1."), let code = Int(status[1]) else { return nil }
        var headers = [(name: String, value: String)]()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingOWS()))
        }
        return HTTPResponseHead(status: code, reason: status.count > 2 ? String(status[2]) : "", headers: headers)
    }

    public static func == (lhs: HTTPResponseHead, rhs: HTTPResponseHead) -> Bool {
        lhs.status == rhs.status && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}
