import Testing
@testable import SyncClient

@Suite("drive scripts")
struct DriveScriptTests {
    @Test func everyCommandParses() throws {
        let script = try DriveScript("""
        # a tour
        scroll 120
        by -20.5
        goto install 0.25
        goto intro
        sweep 0 5000 10s 30
        sweep 10 0 500ms
        sleep 1.5s   # trailing comment
        sleep 2
        share talk.md
        take
        release

        expect followers >= 3
        EXPECT followers == 0
        """)
        #expect(script.lines.map(\.number) == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15])
        #expect(script.lines.map(\.command) == [
            .scroll(120), .by(-20.5), .goto(id: "install", fraction: 0.25), .goto(id: "intro", fraction: 0),
            .sweep(from: 0, to: 5000, seconds: 10, hz: 30), .sweep(from: 10, to: 0, seconds: 0.5, hz: 60),
            .sleep(1.5), .sleep(2), .share(path: "talk.md"), .take, .release,
            .expectFollowers(.atLeast, 3), .expectFollowers(.exactly, 0),
        ])
    }

    @Test(arguments: [
        ("scrol 5", "line 1: unknown command 'scrol'"),
        ("scroll", "line 1: usage: scroll OFFSET"),
        ("scroll -3", "line 1: an offset must be 0 or more, not -3"),
        ("scroll ten", "line 1: an offset must be a number, not 'ten'"),
        ("by", "line 1: usage: by DELTA"),
        ("goto", "line 1: usage: goto ID [FRACTION]"),
        ("goto a 2", "line 1: a fraction must be from 0 to 1, not 2"),
        ("sweep 0 10", "line 1: usage: sweep FROM TO DURATION [HZ]"),
        ("sweep 0 10 soon", "line 1: not a duration: 'soon' (e.g. 500ms, 2s, 1m)"),
        ("sweep 0 10 1s 0", "line 1: a rate must be above 0 and at most 1000 Hz"),
        ("sleep", "line 1: usage: sleep DURATION"),
        ("sleep -1s", "line 1: not a duration: '-1s' (e.g. 500ms, 2s, 1m)"),
        ("sleep 1441m", "line 1: a duration is at most 24 h, not 1441m"),
        ("sweep 0 100 1e17s 1000", "line 1: a duration is at most 24 h, not 1e17s"),
        ("share", "line 1: usage: share FILE"),
        ("take now", "line 1: usage: take"),
        ("release 1", "line 1: usage: release"),
        ("expect followers >= ", "line 1: usage: expect followers OP N"),
        ("expect presenters >= 1", "line 1: only 'expect followers OP N' is known, not 'presenters'"),
        ("expect followers ~ 1", "line 1: unknown comparison '~'; use one of >= > == <= <"),
        ("expect followers >= x", "line 1: a count must be a whole number, not 'x'"),
        ("scroll 1\n\n# fine\nbogus", "line 4: unknown command 'bogus'"),
    ])
    func errorsNameTheLine(_ text: String, _ message: String) {
        #expect(throws: DriveScript.ParseError.self) { try DriveScript(text) }
        do {
            _ = try DriveScript(text)
        } catch {
            #expect(error.description == message)
        }
    }

    /// A script saved with Windows line ends (CRLF) reads the same, line numbers included.
    @Test func crlfLineEndsReadTheSame() throws {
        let script = try DriveScript("take\r\nscroll 10\r\n\r\n# a comment\r\nsleep 1s\r\n")
        #expect(script.lines.map(\.command) == [.take, .scroll(10), .sleep(1)])
        #expect(script.lines.map(\.number) == [1, 2, 5])
        #expect(throws: DriveScript.ParseError(line: 2, message: "unknown command 'nope'")) { try DriveScript("take\r\nnope\r\n") }
    }

    @Test func durations() {
        #expect(DriveScript.duration("500ms") == 0.5)
        #expect(DriveScript.duration("2s") == 2)
        #expect(DriveScript.duration("1m") == 60)
        #expect(DriveScript.duration("3") == 3)
        #expect(DriveScript.duration("x") == nil)
    }

    @Test func comparisons() {
        #expect(DriveScript.Comparison.atLeast.holds(3, 3))
        #expect(!DriveScript.Comparison.more.holds(3, 3))
        #expect(DriveScript.Comparison.fewer.holds(2, 3))
        #expect(DriveScript.Comparison.atMost.holds(3, 3))
        #expect(!DriveScript.Comparison.exactly.holds(2, 3))
    }
}

@Suite("WebSocket URLs")
struct WebSocketURLTests {
    @Test func parses() throws {
        let url = try #require(WebSocketURL("wss://example.com/rooms/demo?role=presenter"))
        #expect(url.secure && url.host == "example.com" && url.port == 443 && url.target == "/rooms/demo?role=presenter")
        let local = try #require(WebSocketURL("ws://127.0.0.1:8080"))
        #expect(local.port == 8080 && local.target == "/" && local.hostHeader == "127.0.0.1:8080")
        let v6 = try #require(WebSocketURL("ws://[::1]:9000/rooms/x"))
        #expect(v6.host == "::1" && v6.port == 9000 && v6.hostHeader == "[::1]:9000")
        #expect(WebSocketURL("http://x") == nil)
        #expect(WebSocketURL("ws://:80/") == nil)
        #expect(WebSocketURL("ws://host:99999/") == nil)
    }
}
