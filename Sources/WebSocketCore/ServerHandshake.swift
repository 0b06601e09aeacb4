import HTTP1
/// The server side of the opening handshake (RFC 6455 §4.2).
public enum ServerHandshake {
    /// The GUID that §1.3 appends to the key.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// A valid upgrade request, ready to be accepted.
    public struct Upgrade: Sendable, Equatable {
        /// `Sec-WebSocket-Key`: 16 bytes in canonical base64 are always 24 characters,
        /// held here inline (no string per upgrade) in the first 24 lanes.
        let keyCharacters: SIMD32<UInt8>
        static let keyCount = 24

        /// The client's `Sec-WebSocket-Key`.
        public var key: String { withKey { String(decoding: $0, as: UTF8.self) } }

        func withKey<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
            withUnsafeBytes(of: keyCharacters) { body(UnsafeBufferPointer(rebasing: $0.bindMemory(to: UInt8.self)[..<Self.keyCount])) }
        }

        /// Subprotocols the client offered, in its order of preference.
        public var protocols: [String]
        public var extensions: [ExtensionOffer]
    }

    /// Whether the request asks for a WebSocket at all (`Upgrade: websocket`).
    public static func isUpgrade(_ request: HTTPRequest) -> Bool {
        request.fields.hasToken(.upgrade, letters: "websocket")
    }

    /// Checks an upgrade request (§4.2.1). On failure, the HTTP answer says what was wrong:
    /// 405 for a method other than GET, 426 for a missing upgrade or an unsupported
    /// version (naming version 13), 400 for anything else (content included).
    public static func validate(_ request: HTTPRequest) -> Result<Upgrade, HTTPError> {
        guard request.method == "GET" else {
            return .failure(HTTPError(.error(405, "a WebSocket upgrade must use GET", headers: [("Allow", "GET")])))
        }
        guard !request.hasContent else {
            return .failure(HTTPError(.error(400, "a WebSocket upgrade carries no content: the bytes after its head are frames")))
        }
        guard isUpgrade(request) else {
            return .failure(HTTPError(.error(426, "this endpoint speaks WebSocket only (a browser that asks for text/html gets the room's viewer page here)", headers: upgradeHeaders)))
        }
        guard request.minorVersion >= 1 else {
            return .failure(HTTPError(.error(400, "a WebSocket upgrade needs HTTP/1.1")))
        }
        guard request.hasField(.host) else {
            return .failure(HTTPError(.error(400, "missing Host header")))
        }
        guard request.fields.hasToken(.connection, letters: "upgrade") else {
            return .failure(HTTPError(.error(400, "Connection header must include Upgrade")))
        }
        guard request.fields.withSingleValue(.secWebSocketVersion, { $0.elementsEqual("13".utf8) }) == true else {
            return .failure(HTTPError(versionProblem(request.fields)))
        }
        let key: SIMD32<UInt8>? = request.fields.withSingleValue(.secWebSocketKey) { text in
            guard Base64.decodedCount(text) == 16 else { return nil }  // so 24 characters
            var key = SIMD32<UInt8>()
            for (lane, character) in text.enumerated() { key[lane] = character }
            return key
        } ?? nil
        guard let key else {
            return .failure(HTTPError(.error(400, keyProblem(request.fields))))
        }
        guard let extensions = ExtensionOffer.parse(request.values(.secWebSocketExtensions)) else {
            return .failure(HTTPError(.error(400, "malformed Sec-WebSocket-Extensions header")))
        }
        let protocols = request.tokens(.secWebSocketProtocol)
        return .success(Upgrade(keyCharacters: key, protocols: protocols, extensions: extensions))
    }

    /// What is wrong with a request's `Sec-WebSocket-Version`: missing or another version
    /// (426, naming 13), or given more than once (400: one field, one value).
    private static func versionProblem(_ fields: HTTPFields) -> HTTPResponse {
        let count = fields.count(of: .secWebSocketVersion)
        if count > 1 { return .error(400, "Sec-WebSocket-Version appears \(count) times; a request gives it once (13)") }
        return .error(426, count == 0 ? "missing Sec-WebSocket-Version; this server speaks 13" : "unsupported Sec-WebSocket-Version; this server speaks 13",
                      headers: upgradeHeaders)
    }

    /// What is wrong with a request's `Sec-WebSocket-Key`: missing, repeated, or not 16
    /// bytes in base64.
    private static func keyProblem(_ fields: HTTPFields) -> String {
        switch fields.count(of: .secWebSocketKey) {
        case 0: "missing Sec-WebSocket-Key header"
        case 1: "Sec-WebSocket-Key must be 16 bytes in base64"
        case let count: "Sec-WebSocket-Key appears \(count) times; a request gives it once"
        }
    }

    /// `Sec-WebSocket-Accept` for a key (§4.2.2): base64(SHA-1(key + GUID)).
    public static func acceptValue(for key: String) -> String {
        var key = key
        return key.withUTF8 { key in
            String(unsafeUninitializedCapacity: acceptValueCount) { writeAcceptValue(for: key, into: UnsafeMutableRawBufferPointer($0)) }
        }
    }

    /// Base64 of a 20-byte SHA-1 digest.
    static let acceptValueCount = 28

    /// Writes `acceptValue(for: key)` into `destination` (at least 28 bytes); returns 28.
    static func writeAcceptValue(for key: UnsafeBufferPointer<UInt8>, into destination: UnsafeMutableRawBufferPointer) -> Int {
        let guid = guid.utf8
        return withUnsafeTemporaryAllocation(byteCount: key.count + guid.count + SHA1.digestSize, alignment: 1) { scratch in
            let input = UnsafeMutableRawBufferPointer(rebasing: scratch[..<(key.count + guid.count)])
            input.copyMemory(from: UnsafeRawBufferPointer(key))
            UnsafeMutableRawBufferPointer(rebasing: input[key.count...]).copyBytes(from: guid)
            let digest = UnsafeMutableRawBufferPointer(rebasing: scratch[input.count...])
            SHA1.hash(UnsafeRawBufferPointer(input), into: digest)
            return Base64.encode(UnsafeRawBufferPointer(digest), into: destination)
        }
    }

    /// The bytes of the 101 response that completes the handshake (as `response(…).bytes`,
    /// written straight into one array: the accept value too), with room for
    /// `spareCapacity` bytes more (the first frames, sent with it).
    public static func responseBytes(for upgrade: Upgrade, subprotocol: String?, extensions: String?, spareCapacity: Int = 0) -> [UInt8] {
        let head: StaticString = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
        let protocolName: StaticString = "\r\nSec-WebSocket-Protocol: "
        let extensionsName: StaticString = "\r\nSec-WebSocket-Extensions: "
        var size = head.utf8CodeUnitCount + acceptValueCount + 4
        if let subprotocol { size += protocolName.utf8CodeUnitCount + subprotocol.utf8.count }
        if let extensions { size += extensionsName.utf8CodeUnitCount + extensions.utf8.count }
        return [UInt8](unsafeUninitializedCapacity: size + spareCapacity) { buffer, count in
            var out = ByteCursor(buffer)
            out.put(head)
            out.advance(upgrade.withKey { writeAcceptValue(for: $0, into: out.rest) })
            if let subprotocol {
                out.put(protocolName)
                out.put(subprotocol)
            }
            if let extensions {
                out.put(extensionsName)
                out.put(extensions)
            }
            out.put("\r\n\r\n" as StaticString)
            count = out.count
        }
    }

    /// The 101 response that completes the handshake.
    public static func response(for upgrade: Upgrade, subprotocol: String?, extensions: String?) -> HTTPResponse {
        var headers: [(name: String, value: String)] = [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", acceptValue(for: upgrade.key)),
        ]
        if let subprotocol { headers.append(("Sec-WebSocket-Protocol", subprotocol)) }
        if let extensions { headers.append(("Sec-WebSocket-Extensions", extensions)) }
        return HTTPResponse(status: 101, headers: headers)
    }

    private static let upgradeHeaders: [(name: String, value: String)] = [
        ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
    ]
}

/// An HTTP answer that refuses a request.
public struct HTTPError: Error, Sendable, Equatable {
    public var response: HTTPResponse
    public init(_ response: HTTPResponse) { self.response = response }
}
