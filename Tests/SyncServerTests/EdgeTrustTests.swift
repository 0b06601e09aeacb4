import Access
import Foundation
import ScrollModel
@testable import SyncServer
import Testing
import Transport

/// Issue 44 (trust at the edges, round 3), on the in-process server: a private room is its
/// presenters' only, a token has one spelling, and a private room is not told apart from a
/// room that is not there.
@Suite("Trust at the edges, round 3")
struct EdgeTrustTests {
    static let welcome = #""type":"welcome""#

    /// Joins `path` as a presenter and expects the join refused: its `error` says `reason`,
    /// then the connection closes with 1008.
    static func refused(_ server: Server, _ loop: EventLoop, _ path: String, saying reason: String) throws {
        let presenter = try InProcessClient(server, loop: loop, path: path)
        #expect(presenter.wait { $0.contains(#""code":"unauthorized""#) && $0.contains(reason) }, "\(path): \(presenter.messages)")
        #expect(loop.advance(until: { presenter.pump(); return presenter.closeCode != nil }))
        #expect(presenter.closeCode == 1008 && !presenter.messages.contains { $0.contains(Self.welcome) }, "\(path): \(presenter.messages)")
    }

    /// `drive … --follow-key FK` without `--key` made the room private, and anyone's to present.
    @Test func aFollowKeyFromAPresenterWithoutAKeyIsRefusedAndTheRoomStaysPublic() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        try Self.refused(server, loop, "/rooms/open?role=presenter&followKey=FK-123", saying: "presenter key (key=…) or a presenter token")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/open")
        #expect(follower.wait { $0.contains(Self.welcome) }, "the room is not private: \(follower.answer)")
        // Beside a keyless presenter, a key of one's own is no proof either.
        let keyless = try InProcessClient(server, loop: loop, path: "/rooms/open?role=presenter")
        #expect(keyless.wait { $0.contains(Self.welcome) })
        try Self.refused(server, loop, "/rooms/open?role=presenter&key=mine&followKey=EVIL-1", saying: "presenter token")
        loop.advance(by: 100_000_000)
        follower.pump()
        #expect(follower.closeCode == nil, "its followers stay")
    }

    /// A room a presenter token made private has no presenter key: a presenter without a token
    /// may not present it, nor replace its follow key (which closed its audience).
    @Test func aPrivateRoomWithoutAPresenterKeyTakesOnlyTokenPresenters() throws {
        let (server, loop) = try TokenTests.server()
        defer { server.shutdown() }
        let owner = try InProcessClient(server, loop: loop, path: "/rooms/board?role=presenter&followKey=fk-real-1&token=\(TokenTests.token("board", .presenter))")
        #expect(owner.wait { $0.contains(Self.welcome) }, "\(owner.answer)")
        owner.send(##"{"type":"document","name":"plan.md","format":"markdown","text":"# The plan"}"##)
        #expect(owner.wait { $0.contains(#""type":"document""#) })
        let audience = try InProcessClient(server, loop: loop, path: "/rooms/board?followKey=fk-real-1")
        #expect(audience.wait { $0.contains("# The plan") })
        try Self.refused(server, loop, "/rooms/board?role=presenter", saying: "is private")
        try Self.refused(server, loop, "/rooms/board?role=presenter&followKey=EVIL-1", saying: "is private")
        try Self.refused(server, loop, "/rooms/board?role=presenter&key=guess&followKey=EVIL-1", saying: "is private")
        loop.advance(by: 100_000_000)
        audience.pump()
        #expect(audience.closeCode == nil, "the audience stays")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/board?followKey=fk-real-1").upgraded, "the real follow key still opens it")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/board?followKey=EVIL-1").status.hasPrefix("HTTP/1.1 403 "))
    }

    /// A token whose signature has 256·k zero bytes more verified (the lengths' difference was
    /// folded into 8 bits): one token had unlimited spellings.
    @Test(arguments: [1, 256, 512])
    func aTokenWithBytesAddedToItsSignatureIsRefused(extra: Int) throws {
        let (server, loop) = try TokenTests.server()
        defer { server.shutdown() }
        let token = TokenTests.token("talk", .follower)
        let parts = token.split(separator: ".")
        let signature = try #require(Base64URL.decode(parts[2].utf8))
        let padded = "\(parts[0]).\(parts[1]).\(Base64URL.encode(signature + [UInt8](repeating: 0, count: extra)))"
        #expect((try? TokenVerifier(secret: TokenTests.secret).verify(padded, now: wallMilliseconds() / 1000).get()) == nil)
        let answer = try InProcessClient(server, loop: loop, path: "/rooms/talk?token=\(padded)")
        #expect(answer.status.hasPrefix("HTTP/1.1 401 ") && answer.answer.contains("bad signature"), "\(answer.answer)")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/talk?token=\(token)").upgraded)
    }

    /// The answer's status and body with the room's name taken out.
    static func answer(_ path: String, room: String, _ server: Server, _ loop: EventLoop) -> String {
        let (status, body) = ServerRecordingTests.get(path.replacingOccurrences(of: "ROOM", with: room), server, loop)
        return "\(status) \(body.replacingOccurrences(of: room, with: "ROOM"))"
    }

    /// Rooms left out of `GET /rooms` are revealed by no endpoint: without a key, with a wrong
    /// follow key and with a wrong presenter key, a private room (recorded or not) answers its
    /// document and recording as a room that is not there does.
    @Test func aPrivateRoomAnswersAsARoomThatIsNotThere() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        for (room, record) in [("hushed", "&record=1"), ("quiet", "")] {
            let presenter = try InProcessClient(server, loop: loop, path: "/rooms/\(room)?role=presenter&key=k&followKey=fk-9\(record)")
            #expect(presenter.wait { $0.contains(Self.welcome) })
            presenter.send(##"{"type":"document","name":"plan.md","format":"markdown","text":"# The plan"}"##)
            #expect(presenter.wait { $0.contains(#""type":"document""#) })
        }
        for path in ["/rooms/ROOM/document", "/rooms/ROOM/document?followKey=guess", "/rooms/ROOM/recording",
                     "/rooms/ROOM/recording?followKey=guess", "/rooms/ROOM/recording?key=guess"] {
            let missing = Self.answer(path, room: "nowhere", server, loop)
            #expect(!missing.hasPrefix("200") && !missing.hasPrefix("404"), "\(path): \(missing)")
            for room in ["hushed", "quiet"] {
                #expect(Self.answer(path, room: room, server, loop) == missing, "\(path) in \(room)")
            }
        }
        #expect(Self.answer("/rooms/ROOM/document?followKey=fk-9", room: "quiet", server, loop).hasPrefix("200"), "the key opens it")
        #expect(Self.answer("/rooms/ROOM/recording?followKey=fk-9", room: "hushed", server, loop).hasPrefix("200"))
        #expect(Self.answer("/rooms/ROOM/recording?key=k", room: "quiet", server, loop).hasPrefix("404 room ROOM is not recorded"))
    }
}
