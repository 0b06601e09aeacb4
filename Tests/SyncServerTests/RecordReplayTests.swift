import Foundation
import Testing

/// Record, play and replay a room (issue 29) with the real binary: a recording of a driven room
/// holds its moves at their times and no secret, passes the schemas (checked by Python's
/// jsonschema), plays back as the same states, and drives another room to the same places.
@Suite("Record, play, replay")
struct RecordReplayTests {
    static let binary = ServerProcess.binary.path

    @Test func aRecordedTalkPlaysAndDrivesAnotherRoomAlike() throws {
        let server = try ServerProcess()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("record-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("talk.rec").path
        let script = directory.appendingPathComponent("talk.drive").path
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Examples/tour.md").path
        let share = directory.appendingPathComponent("share.drive").path
        try "share \(examples)\nsleep 0.2s\n".write(toFile: share, atomically: true, encoding: .utf8)
        try "goto why-scrollsync\nsleep 0.3s\nscroll 40\nsleep 0.3s\n".write(toFile: script, atomically: true, encoding: .utf8)

        // A private room with a document; the recorder follows it with its follow key.
        let shared = try run(Self.binary, ["drive", server.url + "/rooms/talk", "--key", "k", "--follow-key", "secret-follow", "--script", share])
        #expect(shared.status == 0, "\(shared.output)")
        let recorder = try Child(Self.binary, ["record", server.url + "/rooms/talk?role=follower", "--follow-key", "secret-follow",
                                               "-o", file, "--duration", "20"])
        // Joined once something is recorded (its own join's presence): progress on standard error.
        #expect(recorder.waitForOutput { $0.contains { $0.contains(#/: [1-9][0-9]* events,/#) } }, "\(recorder.output)")
        let drive = try run(Self.binary, ["drive", server.url + "/rooms/talk", "--key", "k", "--follow-key", "secret-follow", "--script", script])
        #expect(drive.status == 0, "\(drive.output)")
        recorder.stop()  // Ctrl-C (SIGTERM): the file is complete
        #expect(recorder.wait(timeout: 10) != nil)

        let text = try String(contentsOfFile: file, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.first?.contains(#""format":"scrollsync-recording""#) == true, "\(lines.first ?? "")")
        #expect(lines.first?.contains(#""document":{"type":"document","name":"tour.md""#) == true, "the room's document is in the header")
        #expect(!text.contains("secret-follow") && !text.contains("key=k"), "no key, follow key or token in a recording")
        #expect(lines.contains { $0.contains(#""anchor":{"id":"why-scrollsync""#) }, "the goto is a state with its anchor")
        #expect(lines.contains { $0.contains(#""offset":40,"#) })
        let schema = try run("python3", [peersDirectory.appendingPathComponent("recording_check.py").path, file])
        #expect(schema.status == 0 && schema.output.hasPrefix("ok "), "\(schema.output)")

        let played = try run(Self.binary, ["play", file, "--json", "--speed", "50"])
        #expect(played.status == 0)
        let states = played.output.split(separator: "\n").filter { $0.contains(#""type":"state""#) }
        #expect(states.count == 2 && states[0].contains("why-scrollsync") && states[1].contains(#""offset":40,"#), "\(played.output)")

        let follower = try Child(Self.binary, ["follow", server.url + "/rooms/again", "--json"], errors: .discard)
        let replay = try run(Self.binary, ["replay", file, server.url + "/rooms/again", "--key", "k2", "--speed", "20"])
        #expect(replay.status == 0, "\(replay.output)")
        #expect(follower.waitForOutput { $0.contains { $0.contains(#""offset":40,"#) } }, "the replay drives the room: \(follower.output)")
        #expect(follower.lines.contains { $0.contains(#""anchor":{"id":"why-scrollsync""#) })
        follower.stop()
    }

    @Test func aBadRecordingIsRefusedNamingItsLine() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).rec").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try #"{"format":"scrollsync-recording","version":1,"room":"r","started":"s","url":"ws://h/rooms/r"}"#.appending("\n[1,{\"type\":\"state\",\"seq\":\"\u{1b}[2J\"}]\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let result = try run(Self.binary, ["play", file, "--json"])
        #expect(result.status == 65)
        #expect(result.output.contains("line 2:") && !result.output.contains("\u{1b}"), "\(result.output)")
    }
}

extension RecordReplayTests {
    /// `play` in a real terminal: the hand-written vector plays to its end at the bottom of its
    /// document; space pauses; ← goes back a section change at a time, to the block the
    /// presenter showed there.
    @Test func aRecordingPlaysInTheTerminalWithItsControls() throws {
        let vector = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Protocol/vectors/recording.jsonl").path
        let terminal = try Tmux([Self.binary, "play", vector, "--speed", "64", "--idle-limit", "0.5"], width: 50, height: 6)
        let end = terminal.wait { $0.statusLine.contains("■ 0:02 / 0:02 ×64") }
        #expect(end.statusLine.contains("■ 0:02 / 0:02 ×64"), "played to its end: \(end)")
        #expect(end.text.contains { $0.contains("More.") }, "at the bottom of the document: \(end)")
        try terminal.keys("Space")
        #expect(terminal.wait { $0.statusLine.contains("⏸") }.statusLine.contains("⏸"), "space pauses")
        try terminal.keys("Left")
        try terminal.keys("Left")
        // Back two section changes: the first state, at the top of the document, at 0.5 s.
        let back = terminal.wait { $0.statusLine.contains("⏸ 0:00 / 0:02") && $0.statusLine.contains(" 0%") }
        #expect(back.statusLine.contains("⏸ 0:00 / 0:02") && back.statusLine.contains(" 0%"), "\(back)")
        #expect(back.text.dropFirst().first?.contains("Talk") == true, "the first block at the top: \(back)")
        try terminal.keys("Right")
        #expect(terminal.wait { $0.statusLine.contains("⏸ 0:01 / 0:02") }.statusLine.contains("⏸ 0:01"), "→: the next section change")
        try terminal.keys("-")
        let slower = terminal.wait { $0.statusLine.contains("×32") }
        #expect(slower.statusLine.contains("⏸") && slower.statusLine.contains("×32"), "-: half as fast, still paused: \(slower.statusLine)")
        try terminal.keys("q")
    }
}

extension RecordReplayTests {
    /// `load --trace`: the presenters send the recording's moves at its pace (here the vector's
    /// three states, 100 times as fast: a pass of 0.615 s, played again from its start), and
    /// the report says which trace and speed.
    @Test func aLoadTestReplaysARecordedSessionsPace() throws {
        let server = try ServerProcess()
        let vector = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Protocol/vectors/recording.jsonl").path
        let json = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: json) }
        let result = try run(Self.binary, ["load", server.url, "--trace", vector, "--speed", "100", "--followers", "20", "--duration", "2",
                                           "--json", json, "--max-loss", "0"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("trace recording.jsonl at ×100 (3 moves a pass of 0.62 s)"), "\(result.output)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any]
        let configuration = report?["configuration"] as? [String: Any]
        let trace = configuration?["trace"] as? [String: Any]
        #expect(trace?["file"] as? String == "recording.jsonl" && trace?["speed"] as? Double == 100 && trace?["moves"] as? Int == 3)
        // 2 s of 0.615-s passes of 3 moves: 4 passes begun, 10 to 12 moves sent (not a fixed 60/s).
        let sent = report?["updatesSent"] as? Int ?? -1
        #expect((9...12).contains(sent), "moves sent at the trace's pace: \(sent)")
        let refused = try run(Self.binary, ["load", server.url, "--trace", vector, "--in-flight", "4"])
        #expect(refused.status == 64 && refused.output.contains("--trace sets the presenters' pace"), "\(refused.output)")
    }
}
