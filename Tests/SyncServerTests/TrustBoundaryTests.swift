import Access
import Foundation
@testable import Hub
import ScrollModel
@testable import SyncServer
import Testing
import Synchronization
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
        #expect(PrivateRoomTests.metric(server, loop, #"scrollsync_refusals_total{reason="origin"}"#) == 1)
    }

    @Test func listedOriginsOrAStarAreAllowed() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.allowedOrigins = ["https://slides.example.org"] }
        let listed = try InProcessClient(server, loop: loop, path: "/rooms/a", headers: ["Origin: https://slides.example.org"])
        #expect(listed.upgraded)
        let other = try InProcessClient(server, loop: loop, path: "/rooms/a", headers: ["Origin: https://evil.example"])
        #expect(other.status.hasPrefix("HTTP/1.1 403 "))
        let (open, openLoop) = try InProcessRoomTests.server { $0.allowedOrigins = ["*"] }
        let any = try InProcessClient(open, loop: openLoop, path: "/rooms/a", headers: ["Origin: https://evil.example"])
        #expect(any.upgraded)
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
        #expect(PrivateRoomTests.metric(server, loop, #"scrollsync_refusals_total{reason="message_flood"}"#) == 1)
        let next = try InProcessClient(server, loop: loop, path: "/rooms/flood?role=presenter&key=k")
        #expect(next.wait { $0.contains(#""type":"welcome""#) && $0.contains(#""followers":0"#) }, "the closed follower left the room: \(next.messages)")
        #expect(PrivateRoomTests.metric(server, loop, "scrollsync_errors_unanswered_total") == 2_000 - InboundGate.errorBurst)
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

@Suite("Presenter key checks under concurrency")
struct KeyCheckConcurrencyTests {
    @Test func guessesSentAtOnceAreCheckedNoMoreThanTheLimitAllows() throws {
        let (server, loop) = try InProcessRoomTests.server()
        let owner = try InProcessClient(server, loop: loop, path: "/rooms/vault?role=presenter&key=right-key")
        #expect(owner.wait { $0.contains(#""type":"welcome""#) })
        // 100 joins at once from one address; the right key hides at position 93.
        let guesses = try (0..<100).map { index in
            try InProcessClient(server, loop: loop, path: "/rooms/vault?role=presenter&key=" + (index == 93 ? "right-key" : "guess\(index)"),
                                from: "198.51.100.7")
        }
        #expect(loop.advance(until: {
            guesses.allSatisfy { guess in guess.pump(); return guess.closeCode != nil || guess.messages.contains { $0.contains("welcome") } }
        }, timeout: 60), "every join is answered")
        let welcomed = guesses.filter { $0.messages.contains { $0.contains(#""type":"welcome""#) } }.count
        let unauthorized = guesses.filter { $0.messages.contains { $0.contains(#""code":"unauthorized""#) } }.count
        let limited = guesses.filter { $0.messages.contains { $0.contains(#""code":"rate_limited""#) } }.count
        #expect(welcomed == 0, "the right key at position 93 is never checked")
        #expect(unauthorized <= 10, "\(unauthorized) wrong keys checked (limit 10 a minute)")
        #expect(limited == 100 - unauthorized, "the rest are refused unchecked: \(limited)")
        // Another address is not held back by this one's limit.
        let other = try InProcessClient(server, loop: loop, path: "/rooms/vault?role=presenter&key=right-key", from: "203.0.113.9")
        #expect(other.wait { $0.contains(#""type":"welcome""#) })
    }

    @Test func anotherAddressWaitsForAtMostOneHashPerAddressAhead() throws {
        let hasher = KeyHasher()
        let loop = try EventLoop.embedded()
        let order = Mutex<[String]>([])
        for index in 0..<30 {
            #expect(hasher.hash("k\(index)", matching: nil, room: "r", from: "attacker", on: loop) { _ in order.withLock { $0.append("attacker") } })
        }
        #expect(hasher.hash("mine", matching: nil, room: "r", from: "presenter", on: loop) { _ in order.withLock { $0.append("presenter") } })
        #expect(loop.advance(until: { order.withLock { $0.count } == 31 }, timeout: 60))
        let position = order.withLock { $0.firstIndex(of: "presenter") } ?? 99
        #expect(position <= 2, "the other address's check ran after \(position) of the attacker's 30")
    }

    @Test func aKeyVerifiedOnceIsRecognisedWithoutAnotherSlowHash() throws {
        let hasher = KeyHasher()
        let loop = try EventLoop.embedded()
        let record = PresenterKey.record("secret", matching: nil, room: "r")
        let answers = Mutex<[String]>([])
        func check(_ key: String) {
            #expect(hasher.hash(key, matching: record, room: "r", from: "a", on: loop) { answer in answers.withLock { $0.append(answer) } })
        }
        check("secret")
        #expect(loop.advance(until: { answers.withLock { $0.count } == 1 }, timeout: 30))
        let slow = hasher.slowHashes.load(ordering: .relaxed)
        check("secret")
        check("wrong")
        #expect(loop.advance(until: { answers.withLock { $0.count } == 3 }, timeout: 30))
        #expect(answers.withLock { $0 } == [record, record, ""], "the right key matches again, another key does not")
        #expect(hasher.slowHashes.load(ordering: .relaxed) == slow, "no slow hash for either")
    }
}

@Suite("Per-address limits group IPv6 networks")
struct AddressGroupingTests {
    @Test(arguments: [
        ("192.0.2.1", 64, "192.0.2.1"), ("2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"), ("2001:db8:1:2:ffff::1", 64, "2001:db8:1:2::/64"),
        ("2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"), ("2001:db8::1", 128, "2001:db8::1/128"), ("::ffff:192.0.2.1", 64, "192.0.2.1"),
        ("::1", 64, "::/64"),
    ])
    func anIPv6AddressCountsByItsPrefix(_ address: String, _ bits: Int, _ group: String) {
        #expect(AddressGrouping(ipv6PrefixLength: bits).group(address) == group)
    }

    @Test func roomCreationsFromOneIPv6NetworkShareOneLimit() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.limits.roomCreationsPerMinute = 3 }
        let answers = try (0..<5).map { index in
            try InProcessClient(server, loop: loop, path: "/rooms/v6-\(index)?role=presenter&key=k", from: "2001:db8:7:7::\(index + 1)")
        }
        #expect(answers.prefix(3).allSatisfy { $0.upgraded })
        #expect(answers.suffix(2).allSatisfy { $0.status.hasPrefix("HTTP/1.1 429 ") && $0.answer.contains("2001:db8:7:7::/64") }, "\(answers.last!.answer)")
    }
}

@Suite("A restart within the limits")
struct RestoreWithinLimitsTests {
    @Test func aRestartRestoresTheNewestRoomsWithinHalfTheLimitsAndNewRoomsAreStillTaken() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let (server, loop) = try InProcessRoomTests.server { $0.dataDirectory = directory }
            for index in 0..<8 {
                let presenter = try InProcessClient(server, loop: loop, path: "/rooms/old-\(index)?role=presenter&key=k")
                #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
                presenter.send(#"{"type":"scroll","offset":\#(index + 1)}"#)
                #expect(presenter.wait { $0.contains(#""type":"state""#) })
                #expect(loop.advance(until: { server.store?.flush() == true }))  // each room written after the one before
            }
            server.shutdown()
        }
        let (again, loop) = try InProcessRoomTests.server { $0.dataDirectory = directory; $0.limits.rooms = 4 }
        defer { again.shutdown() }
        #expect(again.hub.roomNames.sorted() == ["old-6", "old-7"], "half the room limit, most recently changed first")
        #expect(!FileManager.default.fileExists(atPath: directory + "/old-0.state"), "rooms over the budget are forgotten")
        let follower = try InProcessClient(again, loop: loop, path: "/rooms/old-7")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) && $0.contains(#""offset":8"#) }, "a restored room keeps its state")
        for name in ["new-a", "new-b"] {
            let presenter = try InProcessClient(again, loop: loop, path: "/rooms/\(name)?role=presenter&key=k")
            #expect(presenter.wait { $0.contains(#""type":"welcome""#) }, "a new room after the restart: \(presenter.answer)")
        }
    }
}
