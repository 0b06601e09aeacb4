import ScrollModel
@testable import SyncServer
import Testing
import Transport

/// Other sites, many clients at once and names browsers cannot reach (issue 26), on the
/// in-process server.
@Suite("Trust boundaries in process")
struct TrustBoundaryTests {
    @Test(arguments: [
        ("http://127.0.0.1:8080", "127.0.0.1:8080", true), ("https://talks.example", "talks.example", true),
        ("https://talks.example", "talks.example:443", true), ("http://talks.example", "talks.example", true),
        ("HTTPS://Talks.Example", "talks.example", true), ("http://[::1]:8080", "[::1]:8080", true),
        ("https://evil.example", "talks.example", false), ("http://127.0.0.1:9090", "127.0.0.1:8080", false),
        ("https://talks.example:8443", "talks.example", false), ("http://talks.example", "talks.example:8080", false),
        ("null", "talks.example", false), ("https://talks.example.evil.example", "talks.example", false),
        ("https://user@talks.example", "talks.example", false), ("file://", "talks.example", false),
    ])
    func sameOriginMeansTheHostAndPortTheRequestWasSentTo(_ origin: String, _ host: String, _ same: Bool) {
        #expect(OriginPolicy.isSameOrigin(origin.lowercased(), host: host.lowercased()) == same)
    }

    @Test func byDefaultOnlyThisServersPagesAndClientsWithoutOriginMayConnect() throws {
        let (server, loop) = try InProcessRoomTests.server()
        let evil = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&key=theirs", headers: ["Origin: https://evil.example"],
                                       host: "127.0.0.1:8080")
        #expect(evil.status.hasPrefix("HTTP/1.1 403 ") && evil.answer.contains("origin https://evil.example is not allowed"), "\(evil.answer)")
        let page = try InProcessClient(server, loop: loop, path: "/rooms/talk", headers: ["Origin: http://127.0.0.1:8080"], host: "127.0.0.1:8080")
        #expect(page.upgraded, "a page this server served: \(page.answer)")
        let terminal = try InProcessClient(server, loop: loop, path: "/rooms/talk", host: "127.0.0.1:8080")
        #expect(terminal.upgraded)
    }

    @Test func listedOriginsOrAStarAreAllowed() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.allowedOrigins = ["https://slides.example.org"] }
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/a", headers: ["Origin: https://slides.example.org"]).upgraded)
        #expect(!(try InProcessClient(server, loop: loop, path: "/rooms/a", headers: ["Origin: https://evil.example"]).upgraded))
        let (open, openLoop) = try InProcessRoomTests.server { $0.allowedOrigins = ["*"] }
        #expect(try InProcessClient(open, loop: openLoop, path: "/rooms/a", headers: ["Origin: https://evil.example"]).upgraded)
    }

    @Test(arguments: [".", ".."])
    func roomNamesNoBrowserCanReachAreRefused(_ name: String) throws {
        let (server, loop) = try InProcessRoomTests.server()
        let client = try InProcessClient(server, loop: loop, path: "/rooms/\(name)")
        #expect(client.status.hasPrefix("HTTP/1.1 400 ") && client.answer.contains("room names"), "\(client.answer)")
    }
}

@Suite("Inbound limits per connection")
struct InboundLimitTests {
    @Test func aFollowerThatFloodsIsClosedWith1008AndGetsFewErrorReplies() throws {
        let (server, loop) = try InProcessRoomTests.server()
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/flood")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        // The default: twice the scroll rate's burst (2,000) at once; the clock does not move.
        for _ in 0..<2_100 { follower.send(#"{"type":"scroll","offset":1}"#) }
        #expect(loop.advance(until: { follower.pump(); return follower.closeCode != nil }), "the flood ends the connection")
        #expect(follower.closeCode == 1008)
        let errors = follower.messages.filter { $0.contains(#""type":"error""#) }
        #expect(errors.count == Int(InboundGate.errorBurst), "\(errors.count) error replies to 2,000 refused scrolls")
        #expect(errors.allSatisfy { $0.contains("followers cannot scroll") })
    }

    @Test func aPresenterOverTheScrollRateIsConflatedNotClosed() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.limits.scrollRate = 10; $0.limits.scrollBurst = 5 }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/fast?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        for offset in 1...10 { presenter.send(#"{"type":"scroll","offset":\#(offset)}"#) }
        loop.advance(by: 2_000_000_000)
        presenter.pump()
        #expect(presenter.closeCode == nil, "ten scrolls, twice the scroll burst: conflated, not closed")
        #expect(presenter.states.last?["offset"]?.double == 10, "the newest place reaches the room")
    }

    @Test func theMessageRateCanBeSetOrTurnedOff() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.limits.messagesPerSecond = 0 }
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/open")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        for _ in 0..<5_000 { follower.send(#"{"type":"follow","following":true}"#) }
        loop.advance(by: 1_000_000)
        follower.pump()
        #expect(follower.closeCode == nil)
    }
}
