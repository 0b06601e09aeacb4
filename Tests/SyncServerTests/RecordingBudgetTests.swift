@testable import Hub
import ScrollModel
@testable import SyncServer
import Testing
import Transport

/// Issue 44.5: rooms with `record=1` from one address took the whole budget of recordings
/// (`limits.recordingsTotalBytes`), and a presenter who asked afterwards got a normal welcome
/// and no recording. Each address now has a share, rooms nobody presents in give theirs up
/// first, and a presenter is told when its recording cannot be kept.
@Suite("The recordings' budget (embedded loop)")
struct RecordingBudgetTests {
    static let page = String(repeating: "x", count: 5000)

    static func server(perAddress: Int, total: Int) throws -> (Server, EventLoop) {
        try InProcessRoomTests.server {
            $0.limits.recordingsBytesPerAddress = perAddress
            $0.limits.recordingsTotalBytes = total
            $0.limits.recordingBytes = 64 << 10
            $0.adminToken = "admin"
        }
    }

    static func welcome(_ client: InProcessClient) throws -> JSON {
        try JSON.parse(try #require(client.messages.first { $0.contains(#""type":"welcome""#) }))
    }

    /// From `address`, rooms `prefix0`, `prefix1`, … with `record=1`, each sharing two
    /// documents, until a welcome says the recording is refused (at most `rooms`): the
    /// presenters stay, and the refused one's messages are returned.
    static func flood(_ server: Server, _ loop: EventLoop, from address: String, prefix: String, rooms: Int = 12) throws
        -> (presenters: [InProcessClient], refused: [String]?) {
        var presenters = [InProcessClient]()
        for index in 0..<rooms {
            let presenter = try InProcessClient(server, loop: loop, path: "/rooms/\(prefix)\(index)?role=presenter&key=k&record=1", from: address)
            #expect(presenter.wait { $0.contains(#""type":"welcome""#) }, "\(presenter.answer)")
            presenters.append(presenter)
            if try welcome(presenter)["recording"]?.string == "refused" {
                #expect(presenter.wait { $0.contains(#""type":"error""#) }, "the welcome is followed by why")
                return (presenters, presenter.messages)
            }
            for name in ["a", "b"] {
                presenter.send(#"{"type":"document","name":"\#(name).txt","format":"text","text":""# + name + page + #""}"#)
                #expect(presenter.wait { $0.contains(#""name":"\#(name).txt""#) })
            }
        }
        return (presenters, nil)
    }

    static func recordingBytes(_ server: Server, _ loop: EventLoop) -> Double? {
        let metrics = ServerRecordingTests.get("/metrics", server, loop, authorization: "Bearer admin").body
        return metrics.split(separator: "\n").first { $0.hasPrefix("scrollsync_recording_bytes ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    @Test func oneAddressHoldsItsShareAndIsToldWhenItIsFull() throws {
        let (server, loop) = try Self.server(perAddress: 16 << 10, total: 256 << 10)
        defer { server.shutdown() }
        let (presenters, refused) = try Self.flood(server, loop, from: "192.0.2.1", prefix: "junk")
        _ = presenters
        let messages = try #require(refused, "a later room from the same address is refused its recording")
        #expect(messages.contains { $0.contains("too_large") && $0.contains("(16 KiB, limits.recordingsBytesPerAddress)") }, "the limit in a unit that shows it: \(messages)")
        #expect((Self.recordingBytes(server, loop) ?? .infinity) <= Double(16 << 10), "one address holds at most its share")
        // Another address (an IPv6 client: its /64) still has its own.
        let other = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&key=k&record=1", from: "2001:db8:1:2::5")
        #expect(other.wait { $0.contains(#""type":"welcome""#) })
        #expect(try Self.welcome(other)["recording"]?.string == "on")
        let sameNetwork = try Self.flood(server, loop, from: "2001:db8:1:2::6", prefix: "v6-")
        #expect(sameNetwork.refused != nil, "the rest of that /64 shares its share")
    }

    /// Addresses fill the budget and leave their rooms: a presenter who asks now gets its
    /// recording (theirs go, the one of the address holding most first); while they present,
    /// it is told that its recording cannot be kept instead of a silent 404 later.
    @Test func roomsNobodyPresentsInGiveTheirRecordingsUpAndAPresenterIsToldOtherwise() throws {
        let (server, loop) = try Self.server(perAddress: 16 << 10, total: 40 << 10)
        defer { server.shutdown() }
        var all = [InProcessClient]()
        // Each address floods until it is refused: its share, or (the third) the rest of the whole
        // budget, down to less than one more recording's header.
        for host in 1...3 {
            let flood = try Self.flood(server, loop, from: "192.0.2.\(host)", prefix: "junk\(host)-", rooms: 64)
            #expect(flood.refused != nil, "address \(host) is refused in the end")
            all += flood.presenters
        }
        let full = try #require(Self.recordingBytes(server, loop))
        #expect(full > Double(36 << 10), "the budget is nearly full: \(full)")
        // While they present, a newcomer is told (its room name is the longest allowed, 64 bytes: not even its header fits).
        let told = try InProcessClient(server, loop: loop, path: "/rooms/a-room-name-of-64-characters-whose-header-is-longer-than-any-012?role=presenter&key=k&record=1",
                                       from: "203.0.113.5")
        #expect(told.wait { $0.contains(#""type":"welcome""#) })
        #expect(try Self.welcome(told)["recording"]?.string == "refused", "\(told.messages)")
        #expect(told.wait { $0.contains("too_large") && $0.contains("limits.recordingsTotalBytes") }, "\(told.messages)")
        told.connection.hangUp()
        for presenter in all { presenter.connection.hangUp() }
        loop.advance(by: 100_000_000)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&key=k&record=1", from: "203.0.113.5")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        #expect(try Self.welcome(presenter)["recording"]?.string == "on", "\(presenter.messages)")
        presenter.send(#"{"type":"document","name":"talk.txt","format":"text","text":"talk"# + Self.page + Self.page + #""}"#)
        #expect(presenter.wait { $0.contains(#""name":"talk.txt""#) })
        presenter.send(ServerRecordingTests.scroll(10))
        #expect(presenter.wait { $0.contains(#""offset":10,"#) })
        loop.advance(by: 1_100_000_000)  // the next tick forgets the dropped recordings
        let (status, body) = ServerRecordingTests.get("/rooms/talk/recording?key=k", server, loop)
        #expect(status == 200, "\(body.prefix(200))")
        let recording = try Recording.read(Array(body.utf8))
        #expect(recording.events.contains { if case .document(let document) = $0.message { document.name == "talk.txt" } else { false } })
        #expect(recording.events.contains { if case .state(let state) = $0.message { state.offset == 10 } else { false } })
        #expect((Self.recordingBytes(server, loop) ?? .infinity) <= Double(40 << 10))
        let gone = (1...3).flatMap { host in (0..<4).map { "junk\(host)-\($0)" } }
            .filter { ServerRecordingTests.get("/rooms/\($0)/recording", server, loop, authorization: "Bearer admin").status == 404 }
        #expect(!gone.isEmpty, "recordings of rooms nobody presents in went")
    }
}
