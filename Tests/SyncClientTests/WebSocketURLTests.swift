import HTTP1
import Testing
import ScrollModel
import WebSocketCore
@testable import SyncClient

/// A parsed URL's description parses back to the same URL (issue 22 finding 5:
/// `ws://x]:1:80/` parsed as host `x]:1`, whose description `ws://[x]:1]/` did not parse).
@Suite("WebSocket URLs round trip")
struct WebSocketURLRoundTripTests {
    @Test(arguments: ["ws://x]:1:80/", "ws://[x]:1/", "ws://a:b:80/", "ws://[::1/", "ws://u@host/", "ws://ho st/", "ws:///path", "ws://[]:80/"])
    func malformedHostsAreRefused(_ text: String) {
        #expect(WebSocketURL(text) == nil, "\(text)")
    }

    /// A URL that does not parse says why, in words that point at the fix.
    @Test(arguments: [
        ("http://h/rooms/a", "starts with ws:// or wss://"), ("ws://bücher.example/rooms/a", "punycode"),
        ("ws://[::1/x", "closing ]"), ("ws://[::1]x/", "only a :PORT"), ("ws://[zz]/", "IPv6"), ("ws://h:0/", "1 to 65535"),
        ("ws://h:http/", "1 to 65535"), ("ws:///x", "no host"), ("ws://a b/", "a character a host name cannot"),
        ("ws://h/rooms/a#top", "#fragment"), ("ws://h#", "#fragment"),
    ])
    func aRefusedURLSaysWhy(_ text: String, _ reason: String) {
        #expect(WebSocketURL(text) == nil)
        #expect(throws: WebSocketURL.Problem.self) { try WebSocketURL(parsing: text) }
        do {
            _ = try WebSocketURL(parsing: text)
        } catch {
            #expect(error.description.contains(reason), "\(text): \(error)")
        }
    }

    @Test(arguments: ["ws://127.0.0.1:8080/rooms/a?role=presenter", "wss://example.org/rooms/b", "ws://[::1]:9000/x", "ws://[fe80::1%25eth0]:80/",
                      "wss://h:443/", "ws://name-with-dash.example/?q", "ws://xn--bcher-kva.example:1/",
                      "ws://h/rooms/a b?x=ü", "ws://h/%41%zz"])
    func urlsRoundTrip(_ text: String) throws {
        let url = try #require(WebSocketURL(text))
        #expect(WebSocketURL(url.description) == url, "\(text) → \(url.description)")
    }

    /// Whatever the path and query hold, the request line stays one line: bytes a
    /// request-target cannot hold are percent-encoded (as browsers do), `%` escapes stay.
    @Test func theTargetIsPercentEncodedForTheRequestLine() throws {
        let url = try #require(WebSocketURL("ws://h/rooms/a b?name=Zoë&x=\r\nEvil: 1\u{7F}<>\"{}|\\^`&ok=%41"))
        let encoded = "/rooms/a%20b?name=Zo%C3%AB&x=%0D%0AEvil:%201%7F%3C%3E%22%7B%7D%7C%5C%5E%60&ok=%41"
        #expect(url.target == encoded)
        #expect(url.with(target: "/rooms/a b?name=Zoë&x=\r\nEvil: 1\u{7F}<>\"{}|\\^`&ok=%41").target == encoded)
        #expect(url.with(target: "/r#1").target == "/r%231", "code may put # in a path; it is data")
        #expect(WebSocketURL("ws://h?q")?.target == "/?q" && WebSocketURL("ws://h")?.target == "/")

        let request = ClientHandshake(host: url.hostHeader, target: url.target).requestBytes
        var parser = HTTPRequestParser()
        guard case .complete(let parsed, let rest) = request.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("the request does not parse: \(String(decoding: request, as: UTF8.self))")
            return
        }
        #expect(parsed.target == encoded && rest.isEmpty)
        #expect(parsed.value("Evil") == nil, "no header was added")
    }

    /// Any string at all: if it parses, its description parses back to it.
    @Test func randomStringsRoundTripWhenTheyParse() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ws:/[]@?#%.:1280abcdef-x ")
        for _ in 0..<20_000 {
            let text = "ws://" + String((0..<Int.random(in: 0...14, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            guard let url = WebSocketURL(text) else { continue }
            #expect(WebSocketURL(url.description) == url, "\(text.debugDescription) → \(url.description.debugDescription)")
        }
    }
}

/// Issue 44: a URL shown, logged or kept in a recording drops its secrets however they are
/// spelled (the server decodes `%6Bey` to `key`), so what `record` writes the reader takes.
@Suite("WebSocket URLs without their secrets")
struct WebSocketURLSecretTests {
    @Test(arguments: ["?%6Bey=s3cret", "?Key=s3cret", "?role=follower&TOKEN=s3cret", "?follow%4bey=s3cret&name=Ann", "?k%65y"])
    func everySpellingOfASecretIsLeftOut(_ query: String) throws {
        let url = try #require(WebSocketURL("ws://h:8080/rooms/r\(query)"))
        #expect(!url.withoutSecrets.contains("s3cret") && !url.redacted.contains("s3cret"), "\(url.withoutSecrets)")
        #expect(QueryText.secretProblem(inURL: url.withoutSecrets) == nil, "\(url.withoutSecrets)")
        #expect(!url.withoutSecrets.contains("%6B") && !url.withoutSecrets.lowercased().contains("key"), "\(url.withoutSecrets)")
    }

    @Test func otherParametersStay() throws {
        let url = try #require(WebSocketURL("ws://h:8080/rooms/r?role=follower&key=k&name=Key%20holder"))
        #expect(url.withoutSecrets == "ws://h:8080/rooms/r?role=follower&name=Key%20holder")
        #expect(url.redacted == "ws://h:8080/rooms/r?role=follower&key=***&name=Key%20holder")
    }
}
