import Testing
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
                      "wss://h:443/", "ws://name-with-dash.example/?q", "ws://xn--bcher-kva.example:1/"])
    func urlsRoundTrip(_ text: String) throws {
        let url = try #require(WebSocketURL(text))
        #expect(WebSocketURL(url.description) == url, "\(text) → \(url.description)")
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
