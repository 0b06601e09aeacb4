import HTTP1
import Testing
@testable import WebSocketCore

@Suite("RFC 6455 §4.2.1 upgrade checks")
struct HandshakeValidationTests {
    static func request(_ changes: [String: String?], method: String = "GET", minor: Int = 1) -> HTTPRequest {
        var headers: [String: String] = [
            "Host": "h", "Upgrade": "websocket", "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
        ]
        for (name, value) in changes { headers[name] = value }
        return HTTPRequest(method: method, target: "/echo", minorVersion: minor, headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    func status(_ request: HTTPRequest) -> Int {
        switch ServerHandshake.validate(request) {
        case .success: 101
        case .failure(let error): error.response.status
        }
    }

    @Test func validRequestIsAccepted() {
        guard case .success(let upgrade) = ServerHandshake.validate(Self.request([:])) else { Issue.record("refused"); return }
        let response = ServerHandshake.response(for: upgrade, subprotocol: nil, extensions: nil)
        #expect(response.value("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(String(decoding: response.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(upgrade.key == "dGhlIHNhbXBsZSBub25jZQ==")
    }

    /// The key is held as its 24 characters: any key gives the accept value of its own text.
    @Test func everyKeyIsAnsweredForItsOwnText() {
        for seed in 0..<64 {
            let key = Base64.encode((0..<16).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ seed &* 101) })
            guard case .success(let upgrade) = ServerHandshake.validate(Self.request(["Sec-WebSocket-Key": key])) else {
                Issue.record("key \(key) refused"); continue
            }
            #expect(upgrade.key == key)
            let answer = String(decoding: ServerHandshake.responseBytes(for: upgrade, subprotocol: nil, extensions: nil), as: UTF8.self)
            #expect(answer.contains("Sec-WebSocket-Accept: \(ServerHandshake.acceptValue(for: key))\r\n"))
        }
    }

    /// The server writes the 101 straight into bytes: the same bytes as the response it describes.
    @Test(arguments: [(nil, nil), ("scrollsync.v1", nil), (nil, "permessage-deflate; server_no_context_takeover"), ("p", "x")] as [(String?, String?)])
    func theAnswerIsWrittenAsTheResponseSays(subprotocol: String?, extensions: String?) {
        guard case .success(let upgrade) = ServerHandshake.validate(Self.request([:])) else { Issue.record("refused"); return }
        let response = ServerHandshake.response(for: upgrade, subprotocol: subprotocol, extensions: extensions)
        #expect(ServerHandshake.responseBytes(for: upgrade, subprotocol: subprotocol, extensions: extensions) == response.bytes)
        #expect(response.value("Sec-WebSocket-Protocol") == subprotocol)
        #expect(response.value("Sec-WebSocket-Extensions") == extensions)
    }

    @Test func refusals() {
        #expect(status(Self.request([:], method: "POST")) == 405)
        #expect(status(Self.request(["Upgrade": nil])) == 426)
        #expect(status(Self.request([:], minor: 0)) == 400)
        #expect(status(Self.request(["Host": nil])) == 400)
        #expect(status(Self.request(["Connection": "keep-alive"])) == 400)
        #expect(status(Self.request(["Sec-WebSocket-Key": nil])) == 400)
        #expect(status(Self.request(["Sec-WebSocket-Key": "c2hvcnQ="])) == 400)
        #expect(status(Self.request(["Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ"])) == 400, "unpadded")
        #expect(status(Self.request(["Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==AAAA"])) == 400, "20 bytes")
        #expect(status(Self.request(["Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZ!=="])) == 400)
        #expect(status(Self.request(["Sec-WebSocket-Version": "013"])) == 426)
        #expect(status(Self.request(["Sec-WebSocket-Version": "1"])) == 426)
        #expect(status(Self.request(["Sec-WebSocket-Extensions": "permessage-deflate; ="])) == 400)
        #expect(status(Self.request(["Sec-WebSocket-Version": "8"])) == 426)
        #expect(status(Self.request(["Sec-WebSocket-Version": nil])) == 426)
        #expect(status(Self.request(["Content-Length": "0"])) == 101)
        #expect(status(Self.request(["Content-Length": "5"])) == 400, "its bytes would be taken for frames")
        #expect(status(Self.request(["Transfer-Encoding": "chunked"])) == 400)
        if case .failure(let error) = ServerHandshake.validate(Self.request(["Sec-WebSocket-Version": "8"])) {
            #expect(error.response.value("Sec-WebSocket-Version") == "13")
        }
    }

    /// A missing, repeated or malformed key or version is refused with a message that says
    /// which (RFC 6455 §4.1: each appears once; §4.2.2: another version gets 426 naming 13).
    @Test func keyAndVersionRefusalsSayWhatWasWrong() {
        let key = ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
        let version = ("Sec-WebSocket-Version", "13")
        let rest = [("Host", "h"), ("Upgrade", "websocket"), ("Connection", "Upgrade")]
        func refusal(_ headers: [(String, String)]) -> String? {
            guard case .failure(let error) = ServerHandshake.validate(HTTPRequest(method: "GET", target: "/echo", headers: rest + headers)) else { return nil }
            return "\(error.response.status) \(String(decoding: error.response.body, as: UTF8.self))"
        }
        #expect(refusal([key, version]) == nil)
        #expect(refusal([version]) == "400 missing Sec-WebSocket-Key header\n")
        #expect(refusal([key, key, version]) == "400 Sec-WebSocket-Key appears 2 times; a request gives it once\n")
        #expect(refusal([("Sec-WebSocket-Key", "c2hvcnQ="), version]) == "400 Sec-WebSocket-Key must be 16 bytes in base64\n")
        #expect(refusal([key]) == "426 missing Sec-WebSocket-Version; this server speaks 13\n")
        #expect(refusal([key, version, version]) == "400 Sec-WebSocket-Version appears 2 times; a request gives it once (13)\n")
        #expect(refusal([key, ("Sec-WebSocket-Version", "8")]) == "426 unsupported Sec-WebSocket-Version; this server speaks 13\n")
    }

    @Test func clientAndServerAgree() throws {
        let client = ClientHandshake(host: "h", target: "/rooms/x", protocols: ["scrollsync.v1"], deflate: PerMessageDeflate())
        var parser = HTTPRequestParser()
        guard case .complete(let request, _) = client.requestBytes.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("client request does not parse")
            return
        }
        guard case .success(let upgrade) = ServerHandshake.validate(request) else { Issue.record("refused"); return }
        let negotiated = PerMessageDeflate.negotiate(offers: upgrade.extensions)
        let response = ServerHandshake.response(for: upgrade, subprotocol: "scrollsync.v1", extensions: negotiated?.1)
        let head = try #require(HTTPResponseHead.parse(Array(response.bytes.dropLast(4))))
        guard case .success(let agreement) = client.validate(head) else { Issue.record("client refused answer"); return }
        #expect(agreement.subprotocol == "scrollsync.v1")
        #expect(agreement.deflate == PerMessageDeflate())

        var tampered = head
        tampered.headers = tampered.headers.map { $0.name == "Sec-WebSocket-Accept" ? ($0.name, "AAAA") : $0 }
        #expect(client.validate(tampered) == .failure(.invalid("wrong Sec-WebSocket-Accept")))
    }

    @Test func responseHeadParsing() throws {
        func parse(_ text: String) -> HTTPResponseHead? { HTTPResponseHead.parse(Array(text.utf8)) }
        let head = try #require(parse("HTTP/1.1 101 Switching Protocols\r\nUpgrade:websocket\r\nX-Empty: \t\r\nA:  b c \t"))
        #expect(head.status == 101)
        #expect(head.reason == "Switching Protocols")
        #expect(head.headers.map(\.name) == ["Upgrade", "X-Empty", "A"])
        #expect(head.headers.map(\.value) == ["websocket", "", "b c"])
        #expect(parse("HTTP/1.0 404")?.status == 404)
        #expect(parse("HTTP/1.1 200 ")?.reason == "")
        for bad in ["", "HTTP/2 101", "HTTP/1.1 10", "HTTP/1.1 1O1 x", "HTTP/1.1 1011", "HTTX/1.1 101", "HTTP/1.1 101\r\nno colon"] {
            #expect(parse(bad) == nil, "\(bad) should not parse")
        }
    }
}
