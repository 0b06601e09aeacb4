import Foundation
import ScrollModel
import SyncServer
import Testing
import Transport

/// Server-side recording (issue 29.3): a room recorded at a presenter's `record=1` or for every
/// room (`rooms.record`), served at `GET /rooms/NAME/recording` to whoever may have it, bounded
/// in bytes, and kept across a restart with the embedded store. On the embedded loop: the
/// recording's times are the loop's own clock, so they are exact.
@Suite("Server-side recording (embedded loop)")
struct ServerRecordingTests {
    static func get(_ path: String, _ server: Server, _ loop: EventLoop, authorization: String? = nil) -> (status: Int, body: String) {
        let answer = ask("GET \(path) HTTP/1.1\r\nHost: x\r\n" + (authorization.map { "Authorization: \($0)\r\n" } ?? "") + "\r\n", of: server, on: loop)
        let status = Int(answer.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, String(answer.split(separator: "\r\n\r\n", maxSplits: 1).last ?? ""))
    }

    static func scroll(_ offset: Int) -> String { #"{"type":"scroll","offset":\#(offset),"viewport":10,"content":100}"# }

    /// Ann presents with `record=1`, shares a document and moves three times half a second apart.
    static func recordTalk(_ server: Server, _ loop: EventLoop, path: String = "/rooms/talk?role=presenter&key=k&name=Ann&record=1") throws -> InProcessClient {
        let presenter = try InProcessClient(server, loop: loop, path: path)
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) }, "\(presenter.answer)")
        presenter.send(##"{"type":"document","name":"talk.md","format":"markdown","text":"# One\n\n# Two\n"}"##)
        #expect(presenter.wait { $0.contains(#""type":"document""#) })
        for offset in [10, 20, 30] {
            loop.advance(by: 500_000_000)
            presenter.send(scroll(offset))
            #expect(presenter.wait { $0.contains(#""offset":\#(offset),"#) })
        }
        return presenter
    }

    @Test func aPresentersRecordingHasEveryMoveAtItsTime() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let presenter = try Self.recordTalk(server, loop)
        let (status, body) = Self.get("/rooms/talk/recording?key=k", server, loop)
        #expect(status == 200, "\(body)")
        let recording = try Recording.read(Array(body.utf8))
        #expect(recording.header.room == "talk")
        #expect(recording.header.url.hasSuffix("/rooms/talk") && !recording.header.url.contains("key"))
        #expect(!body.contains("\"k\""), "no key in the recording")
        let states = recording.events.compactMap { event -> (Double, Double)? in
            if case .state(let state) = event.message { (event.seconds, state.offset) } else { nil }
        }
        #expect(states.map(\.1) == [10, 20, 30])
        #expect(states.map(\.0) == [0.5, 1.0, 1.5], "times by the loop's clock")
        #expect(recording.events.contains { if case .document(let document) = $0.message { document.name == "talk.md" } else { false } })
        _ = presenter
    }

    /// Issue 47.5: the presenter whose join starts the recording drives from its first events,
    /// named once (the join used to add it twice: as the room's driver, then as its announcement).
    @Test func theDriverWhoseJoinStartsTheRecordingIsNamedOnce() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let presenter = try Self.recordTalk(server, loop)
        let (status, body) = Self.get("/rooms/talk/recording?key=k", server, loop)
        #expect(status == 200, "\(body)")
        let drivers = try Recording.read(Array(body.utf8)).events.compactMap { event -> String? in
            if case .driver(_, let name) = event.message { name ?? "(no name)" } else { nil }
        }
        #expect(drivers == ["Ann"], "\(body)")
        _ = presenter
    }

    @Test func onlyItsPresenterTheOperatorOrAPrivateRoomsFollowersMayHaveIt() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.adminToken = "admin" }
        defer { server.shutdown() }
        _ = try Self.recordTalk(server, loop)
        #expect(Self.get("/rooms/talk/recording", server, loop).status == 401)
        #expect(Self.get("/rooms/talk/recording?key=wrong", server, loop).status == 403)
        #expect(Self.get("/rooms/talk/recording", server, loop, authorization: "Bearer nope").status == 401)
        #expect(Self.get("/rooms/talk/recording", server, loop, authorization: "Bearer admin").status == 200)
        #expect(Self.get("/rooms/talk/recording?followKey=x", server, loop).status == 401, "a public room's recording is not for followers")
        #expect(Self.get("/rooms/none/recording", server, loop, authorization: "Bearer admin").status == 404)
        let unrecorded = try InProcessClient(server, loop: loop, path: "/rooms/plain?role=presenter&key=k")
        #expect(unrecorded.wait { $0.contains(#""type":"welcome""#) })
        let notRecorded = Self.get("/rooms/plain/recording?key=k", server, loop)
        #expect(notRecorded.status == 404 && notRecorded.body.contains("not recorded"), "\(notRecorded)")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/talk?record=1")
        #expect(follower.status.contains(" 400 ") && follower.answer.contains("only a presenter"), "\(follower.answer)")
        let privately = try InProcessClient(server, loop: loop, path: "/rooms/secret?role=presenter&key=k&followKey=f&record=1")
        #expect(privately.wait { $0.contains(#""type":"welcome""#) })
        #expect(Self.get("/rooms/secret/recording?followKey=f", server, loop).status == 200)
        #expect(Self.get("/rooms/secret/recording?followKey=g", server, loop).status == 403)
        #expect(Self.get("/rooms/secret/recording", server, loop).body.contains("follow key"))
    }

    @Test func everyRoomIsRecordedWithRoomsRecordAndARecordingStopsAtItsLimit() throws {
        let (server, loop) = try InProcessRoomTests.server {
            $0.rooms.recordRooms = true
            $0.limits.recordingBytes = 1024
            $0.adminToken = "admin"
        }
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/busy?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        for offset in 1...40 {
            presenter.send(Self.scroll(offset))
            #expect(presenter.wait { $0.contains(#""offset":\#(offset),"#) })
        }
        let (status, body) = Self.get("/rooms/busy/recording", server, loop, authorization: "Bearer admin")
        #expect(status == 200)
        #expect(body.utf8.count <= 1024 && body.utf8.count > 512, "\(body.utf8.count) bytes")
        let recording = try Recording.read(Array(body.utf8))
        let offsets = recording.events.compactMap { if case .state(let state) = $0.message { state.offset } else { nil } }
        #expect(!offsets.isEmpty && offsets.count < 40 && offsets == (1...offsets.count).map(Double.init), "the beginning is kept: \(offsets)")
        let metrics = Self.get("/metrics", server, loop, authorization: "Bearer admin").body
        #expect(metrics.contains("scrollsync_recordings_stopped_total 1"), "\(metrics.split(separator: "\n").filter { $0.contains("recording") })")
    }

    @Test func aRecordingSurvivesARestartAndADamagedTailIsCutAtItsLastGoodLine() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func server() throws -> (Server, EventLoop) {
            try InProcessRoomTests.server {
                $0.dataDirectory = directory
                $0.adminToken = "admin"
            }
        }
        do {
            let (first, loop) = try server()
            _ = try Self.recordTalk(first, loop)
            first.shutdown()
        }
        let file = directory + "/recordings/talk.rec"
        let written = try String(contentsOfFile: file, encoding: .utf8)
        #expect(written.components(separatedBy: "\n").filter { $0.contains(#""type":"state""#) }.count == 3, "the file is the recording: \(written)")
        // A crash in the middle of a line.
        try (written + #"[2.0,{"type":"sta"#).write(toFile: file, atomically: false, encoding: .utf8)
        // A recording whose room is not kept any more goes with it.
        try Data(written.utf8).write(to: URL(fileURLWithPath: directory + "/recordings/gone.rec"))
        let (second, loop) = try server()
        defer { second.shutdown() }
        #expect(!FileManager.default.fileExists(atPath: directory + "/recordings/gone.rec"))
        #expect(Self.get("/healthz", second, loop).body.contains("recordings: 1 damaged files"))
        let presenter = try InProcessClient(second, loop: loop, path: "/rooms/talk?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        loop.advance(by: 250_000_000)
        presenter.send(Self.scroll(40))
        #expect(presenter.wait { $0.contains(#""offset":40,"#) })
        let (status, body) = Self.get("/rooms/talk/recording?key=k", second, loop)
        #expect(status == 200, "\(body)")
        let recording = try Recording.read(Array(body.utf8))
        let states = recording.events.compactMap { event -> (Double, Double)? in
            if case .state(let state) = event.message { (event.seconds, state.offset) } else { nil }
        }
        #expect(states.map(\.1) == [10, 20, 30, 40], "restored, then recorded on")
        #expect(states.last?.0 == 1.75, "it goes on from its last event: \(states)")
    }
}

extension ServerRecordingTests {
    /// A recording read back from disk is held to the limits it grew under: a file larger than
    /// a room's recording may be is not read into memory, but set aside and counted.
    @Test func aStoredRecordingOverTheRoomsLimitIsNotRestored() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let (first, loop) = try InProcessRoomTests.server { $0.dataDirectory = directory }
            _ = try Self.recordTalk(first, loop)
            first.shutdown()
        }
        let file = directory + "/recordings/talk.rec"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        let (second, loop) = try InProcessRoomTests.server {
            $0.dataDirectory = directory
            $0.limits.recordingBytes = size - 1
            $0.adminToken = "admin"
        }
        defer { second.shutdown() }
        #expect(Self.get("/rooms/talk/recording", second, loop, authorization: "Bearer admin").status == 404, "not restored")
        #expect(FileManager.default.fileExists(atPath: file + ".damaged") && !FileManager.default.fileExists(atPath: file))
        #expect(Self.get("/healthz", second, loop).body.contains("recordings: 1 damaged files"))
    }
}
