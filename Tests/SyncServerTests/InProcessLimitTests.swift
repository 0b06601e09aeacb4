import Foundation
@testable import Hub
import Operations
import ScrollModel
import SyncServer
import Testing
import Transport

/// The server's limits on the in-process server (issue 28.3): rooms and members, origins,
/// scroll and document rates, document bytes, message sizes. Deterministic logic, on an
/// embedded loop whose clock moves only when the test says; no process, no socket, no sleep.
@Suite("Limits in process (embedded loop)")
struct InProcessLimitTests {
    static let second: UInt64 = 1_000_000_000

    static func server(_ adjust: (inout ServerConfiguration) -> Void) throws -> (Server, EventLoop) {
        try InProcessRoomTests.server { configuration in
            configuration.adminToken = "admin"
            adjust(&configuration)
        }
    }

    /// A sample's value in /metrics, asked of the in-process server.
    static func metric(_ name: String, server: Server, loop: EventLoop) -> Double? {
        let text = ask("GET /metrics HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer admin\r\n\r\n", of: server, on: loop)
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last!) }
    }

    static func welcomed(_ client: InProcessClient) -> Bool { client.wait { $0.contains(#""type":"welcome""#) } }

    @Test func roomsAndMembersPerRoom() throws {
        let (server, loop) = try Self.server { $0.limits.rooms = 2; $0.limits.membersPerRoom = 2 }
        defer { server.shutdown() }
        let a = try (0..<2).map { _ in try InProcessClient(server, loop: loop, path: "/rooms/a") }
        #expect(a.allSatisfy { $0.upgraded })
        let full = try InProcessClient(server, loop: loop, path: "/rooms/a")
        #expect(full.status.hasPrefix("HTTP/1.1 503 ") && full.waitForAnswer(containing: "room a is full (2 members)"), "\(full.answer)")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/b").upgraded)
        let c = try InProcessClient(server, loop: loop, path: "/rooms/c")
        #expect(c.status.hasPrefix("HTTP/1.1 503 ") && c.waitForAnswer(containing: "room limit (2)"), "\(c.answer)")
    }

    @Test func originsNotAllowedAreRefused() throws {
        let (server, loop) = try Self.server { $0.allowedOrigins = ["https://slides.example.org"] }
        defer { server.shutdown() }
        let stranger = try InProcessClient(server, loop: loop, path: "/rooms/o", headers: ["Origin: https://evil.example"])
        #expect(stranger.status.hasPrefix("HTTP/1.1 403 ") && stranger.waitForAnswer(containing: "origin https://evil.example is not allowed"),
                "\(stranger.answer)")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/o", headers: ["Origin: https://slides.example.org"]).upgraded)
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/o").upgraded, "clients without Origin (terminals) are not browsers")
    }

    /// Scrolls over the rate conflate: the newest waits and reaches the room when a token
    /// comes back (issue 17.13: the last scroll of a burst was lost); `rate_limited` is sent
    /// once, not per scroll; the states seen stay in order.
    @Test func scrollsOverTheRateConflateAndTheNewestReachesTheRoom() throws {
        let (server, loop) = try Self.server { $0.limits.scrollRate = 2; $0.limits.scrollBurst = 5 }
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/rate?role=presenter")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/rate")
        #expect(Self.welcomed(presenter) && Self.welcomed(follower))
        presenter.send(all: (1...8).map { #"{"type":"scroll","offset":\#($0)}"# })
        func refusals() -> Int { presenter.messages.filter { $0.contains(#""code":"rate_limited""#) }.count }
        #expect(presenter.wait { _ in refusals() >= 1 }, "\(presenter.messages)")
        #expect(follower.wait { $0.contains(#""offset":5,"#) }, "the burst of 5 went through")
        #expect(!follower.messages.contains { $0.contains(#""offset":8,"#) }, "no token back before the clock moves")
        loop.advance(by: Self.second)
        #expect(follower.wait { $0.contains(#""offset":8,"#) }, "the newest scroll reaches the room when a token comes back")
        let offsets = follower.states.compactMap { $0["offset"]?.double }
        // (States a follower has not been sent yet conflate: it may see only some of 1…5.)
        #expect(offsets == offsets.sorted() && offsets.suffix(2) == [5, 8] && !offsets.contains(6) && !offsets.contains(7),
                "in order, ending on the newest; 6 and 7 were replaced by 8: \(offsets)")
        #expect(refusals() == 1, "one notice for the burst, not one per scroll")
        #expect(Self.metric("scrollsync_rate_limited_total", server: server, loop: loop) == 3)
        loop.advance(by: Self.second)
        presenter.send(#"{"type":"scroll","offset":42}"#)
        #expect(follower.wait { $0.contains(#""offset":42,"#) }, "the connection stays: \(follower.messages.suffix(3))")
    }

    @Test func messagesOverTheRoomMessageLimitClose1009() throws {
        let (server, loop) = try Self.server { $0.limits.roomMessageBytes = 2048; $0.limits.documentBytes = 1024 }
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/big?role=presenter")
        #expect(Self.welcomed(presenter))
        presenter.send(#"{"type":"document","name":"a.txt","text":"\#(String(repeating: "x", count: 1500))"}"#)
        #expect(presenter.wait { $0.contains(#""code":"too_large""#) }, "a document over limits.documentBytes: \(presenter.messages)")
        presenter.send(#"{"type":"document","name":"a.txt","text":"\#(String(repeating: "x", count: 3000))"}"#)
        #expect(loop.advance(until: { presenter.pump(); return presenter.closeCode != nil }))
        #expect(presenter.closeCode == 1009, "a message over limits.roomMessageBytes")
    }

    /// Documents are rate-limited per presenter (a burst, then a rate), conflating like
    /// scrolls: the newest reaches the room, `rate_limited` once.
    @Test func documentsAreRateLimitedAndTheNewestWins() throws {
        let (server, loop) = try Self.server { $0.limits.documentsPerMinute = 60; $0.limits.documentBurst = 2 }
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/docrate?role=presenter&key=k")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/docrate")
        #expect(Self.welcomed(presenter) && Self.welcomed(follower))
        presenter.send(all: (1...6).map { #"{"type":"document","text":"version \#($0)"}"# })
        #expect(presenter.wait { $0.contains(#""code":"rate_limited""#) && $0.contains("documents per minute") }, "\(presenter.messages)")
        loop.advance(by: Self.second)
        #expect(follower.wait { $0.contains(#""text":"version 6""#) }, "the newest document reaches the room when a token comes back")
        let seen = follower.messages.filter { $0.contains(#""type":"document""#) }
        #expect(!seen.contains { $0.contains("version 3") || $0.contains("version 4") || $0.contains("version 5") }, "\(seen)")
        #expect(presenter.messages.filter { $0.contains("rate_limited") }.count == 1)
    }

    /// The documents all rooms hold are capped: past it a new document is refused with
    /// `too_large` and a reason; replacing one with a smaller one is fine.
    @Test func documentBytesAreCappedAcrossRooms() throws {
        let (server, loop) = try Self.server { $0.limits.documentsTotalBytes = 3000 }
        defer { server.shutdown() }
        let first = try InProcessClient(server, loop: loop, path: "/rooms/cap-a?role=presenter&key=k")
        let second = try InProcessClient(server, loop: loop, path: "/rooms/cap-b?role=presenter&key=k")
        #expect(Self.welcomed(first) && Self.welcomed(second))
        let big = String(repeating: "a", count: 2000)
        first.send(#"{"type":"document","text":"\#(big)"}"#)
        #expect(first.wait { $0.hasPrefix(#"{"type":"document""#) })
        second.send(#"{"type":"document","text":"\#(big)"}"#)
        #expect(second.wait { $0.contains(#""code":"too_large""#) && $0.contains("shared documents") }, "\(second.messages)")
        #expect(Self.metric("scrollsync_document_bytes", server: server, loop: loop) == 2000)
        first.send(#"{"type":"document","text":"small"}"#)
        #expect(first.wait { $0.contains(#""text":"small""#) })
        second.send(#"{"type":"document","text":"\#(big)"}"#)
        #expect(second.wait { $0.hasPrefix(#"{"type":"document""#) }, "room freed: \(second.messages)")
    }
}
