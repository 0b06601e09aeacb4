import Foundation
import ScrollModel
import Testing

/// Playback as a speaker meets it (issue 47.5): a client's recording names who drives, a
/// recording that never says plays with a driver anyway, `play` exits at the end (as asciinema
/// does) and `replay` shows how far it got on a terminal. Under tmux, with the real binary.
@Suite("Playback (issue 47.5)", .serialized)
struct PlaybackTests {
    static let binary = ServerProcess.binary.path
    static let vector = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/vectors/recording.jsonl").path

    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString.prefix(8))-\(name)").path
    }

    /// A recording of `states` (offset, seconds) of a two-section document, and no driver event.
    static func writeRecording(_ states: [(offset: Double, seconds: Double)], to file: String) throws {
        let by = "00000000000000a1"
        let document = SharedDocument(name: "talk.md", format: .markdown, text: "# Talk\n\nOne.\n\n## Two\n\nMore.\n", by: by)
        let events = states.enumerated().map { index, state in
            Recording.Event(seconds: state.seconds, message: .state(ScrollState(
                seq: index + 1, offset: state.offset, viewport: 4, content: 8, progress: 0, direction: .down, anchor: nil,
                atTop: false, atBottom: false, by: by, t: nil, doc: document.fingerprint)))
        }
        let recording = Recording(header: .init(room: "talk", started: "2026-11-28T14:00:00Z", url: "ws://h/rooms/talk", document: document), events: events)
        try Data(([Recording.headerLine(recording.header)] + recording.events.map(Recording.eventLine)).joined(separator: [10]) + [10])
            .write(to: URL(fileURLWithPath: file))
    }

    /// A follower's recording of a room Ann already drives names her at its start (the
    /// welcome's driver, which `record` used to leave out), and `play` shows her as the driver.
    @Test func aClientRecordingNamesTheDriverItFound() throws {
        let server = try InProcessNode()
        let file = Self.temporary("talk.rec")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let presenter = try RoomConnection(port: server.port, path: "/rooms/talk?role=presenter&key=k&name=Ann")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        presenter.send(##"{"type":"document","name":"talk.md","format":"markdown","text":"# Talk\n\nOne.\n"}"##)
        presenter.send(#"{"type":"scroll","offset":1,"viewport":4,"content":8}"#)
        #expect(presenter.wait { $0.contains(#""offset":1,"#) })
        let recorder = try Child(Self.binary, ["record", server.url + "/rooms/talk", "-o", file, "--duration", "20"])
        #expect(recorder.waitForOutput { $0.contains { $0.contains(#/: [2-9][0-9]* events,/#) } }, "\(recorder.output)")
        recorder.stop()
        #expect(recorder.wait(timeout: 10) != nil)
        let recording = try Recording.read(Array(Data(contentsOf: URL(fileURLWithPath: file))))
        let drivers = recording.events.compactMap { event -> String? in if case .driver(_, let name) = event.message { name } else { nil } }
        #expect(drivers.first == "Ann", "\(recording.events)")

        let terminal = try Tmux([Self.binary, "play", file, "--hold"], width: 80, height: 8)
        let screen = terminal.wait { $0.statusLine.contains("■") && $0.statusLine.contains("driver Ann") }
        #expect(screen.statusLine.contains("driver Ann") && !screen.statusLine.contains("nobody driving"), "\(screen)")
        try terminal.keys("q")
        _ = presenter
    }

    /// A recording with moves and no driver event (older `record`s) plays as driven by its
    /// presenter, never `nobody driving`, at 40, 80 and 120 columns.
    @Test(arguments: [40, 80, 120])
    func aRecordingWithoutADriverPlaysWithOne(_ width: Int) throws {
        let file = Self.temporary("nodriver.rec")
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Self.writeRecording([(0, 0.1), (2, 0.2)], to: file)
        let terminal = try Tmux([Self.binary, "play", file, "--hold"], width: width, height: 8)
        let screen = terminal.wait { $0.statusLine.contains("■") }
        #expect(screen.statusLine.contains("■"), "\(screen)")
        #expect(!screen.statusLine.contains("nobody driving"), "at \(width) columns: \(screen.statusLine)")
        if width >= 80 { #expect(screen.statusLine.contains("driver presenter"), "\(screen.statusLine)") }
        try terminal.keys("q")
    }

    /// `play` exits 0 at the end of the recording (the terminal restored); `--hold` stays on
    /// the last frame until `q`.
    @Test func playExitsAtTheEndUnlessItHolds() throws {
        let played = try Tmux(["sh", "-c", "\(Self.binary) play \(Self.vector) --speed 64 --idle-limit 0.5; echo play exited $?"], width: 80, height: 8)
        let ended = played.wait { $0.contains { $0.contains("play exited") } }
        #expect(ended.contains { $0.contains("play exited 0") }, "\(ended)")

        let held = try Tmux(["sh", "-c", "\(Self.binary) play \(Self.vector) --speed 64 --idle-limit 0.5 --hold; echo play exited $?"], width: 80, height: 8)
        let end = held.wait { $0.statusLine.contains("■ 0:02 / 0:02") }
        #expect(end.statusLine.contains("■ 0:02 / 0:02"), "\(end)")
        // Still there a while after the end (the exit above took well under this).
        let later = held.wait(timeout: 1.5) { $0.contains { $0.contains("play exited") } }
        #expect(!later.contains { $0.contains("play exited") }, "--hold stays: \(later)")
        try held.keys("q")
        let quit = held.wait { $0.contains { $0.contains("play exited") } }
        #expect(quit.contains { $0.contains("play exited 0") }, "\(quit)")
    }

    /// `replay` on a terminal shows a progress line while it plays (the clock and the events
    /// sent), takes it away at the end; without a terminal it writes no such line.
    @Test func replayShowsItsProgressOnATerminalOnly() throws {
        let server = try InProcessNode()
        let file = Self.temporary("progress.rec")
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Self.writeRecording([(0, 0.1), (1, 2.5), (2, 2.6)], to: file)
        let terminal = try Tmux(["sh", "-c", "\(Self.binary) replay \(file) \(server.url)/rooms/rehearsal --key k; echo replay exited $?"], width: 80, height: 8)
        let during = terminal.wait { $0.contains { $0.contains("/ 0:02  1/3 events") } }
        #expect(during.contains { $0.contains("▶ 0:0") && $0.contains("/ 0:02  1/3 events") }, "\(during)")
        let after = terminal.wait { $0.contains { $0.contains("replay exited") } }
        #expect(after.contains { $0.contains("replayed 3 events") } && after.contains { $0.contains("replay exited 0") }, "\(after)")
        #expect(!after.contains { $0.contains("▶") }, "the progress line is gone: \(after)")

        let piped = try run(Self.binary, ["replay", file, server.url + "/rooms/piped", "--key", "k", "--speed", "10"])
        #expect(piped.status == 0 && piped.output.contains("replayed 3 events"), "\(piped.output)")
        #expect(!piped.output.contains("▶") && !piped.output.contains("\r"), "no progress line in a pipe: \(piped.output)")
    }
}
