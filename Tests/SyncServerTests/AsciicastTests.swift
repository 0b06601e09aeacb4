import Foundation
import ScrollModel
import TerminalUI
import TestSupport
import Testing

/// `scrollsync play FILE --cast talk.cast --size 100x30`: the follower's view as asciicast v2,
/// read back by asciinema's own reader (its Python package, in the tests' virtual environment).
@Suite("Recordings as asciicast v2")
struct AsciicastTests {
    static func recording(text: String, name: String = "tour.md") -> Recording {
        let by = "00000000000000a1"
        let document = SharedDocument(name: name, format: .markdown, text: text, by: by)
        func state(_ seq: Int, _ offset: Double, _ anchor: String) -> ScrollState {
            ScrollState(seq: seq, offset: offset, viewport: 28, content: 400, progress: offset / 372, direction: .down,
                        anchor: Anchor(id: anchor, fraction: 0), atTop: false, atBottom: false, by: by, t: nil, doc: document.fingerprint)
        }
        return Recording(header: .init(room: "tour", started: "2026-11-26T09:00:00Z", url: "ws://h/rooms/tour", document: document),
                         events: [.init(seconds: 0.5, message: .driver(SessionID(0xa1), name: "Ann")),
                                  .init(seconds: 1.0, message: .state(state(1, 40, "part-3"))),
                                  .init(seconds: 2.0, message: .state(state(2, 300, "part-12"))),
                                  .init(seconds: 60.0, message: .state(state(3, 100, "part-7")))])
    }

    static let document = "# Tour\n\n" + (1...40).map { "## Part \($0)\n\nText of part \($0), long enough to wrap somewhere." }.joined(separator: "\n\n")

    /// Writes `recording`, runs `play --cast` with `arguments`, reads the cast with asciinema.
    static func cast(_ recording: Recording, _ arguments: [String]) throws -> (header: JSON, events: [(Double, String)], cat: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cast-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("talk.rec").path
        let cast = directory.appendingPathComponent("talk.cast").path
        try Data(([Recording.headerLine(recording.header)] + recording.events.map(Recording.eventLine)).joined(separator: [10])).write(to: URL(fileURLWithPath: file))
        let play = try run(ServerProcess.binary.path, ["play", file, "--cast", cast] + arguments)
        #expect(play.status == 0, "\(play.output)")
        let read = try run("python3", [peersDirectory.appendingPathComponent("cast_check.py").path, cast])
        #expect(read.status == 0, "asciinema's reader took it: \(read.output)")
        let json = try JSON.parse(read.output)
        var events = [(Double, String)]()
        guard case .array(let all)? = json["events"] else { throw Failure("no events: \(read.output)") }
        for event in all {
            guard case .array(let pair) = event else { continue }
            let time: Double = pair.first?.double ?? -1
            let data: String = pair.last?.string ?? ""
            events.append((time, data))
        }
        let cat = try run("python3", ["-m", "asciinema", "cat", cast], environment: ["ASCIINEMA_CONFIG_HOME": directory.path])
        #expect(cat.status == 0, "asciinema cat: \(cat.output)")
        return (json, events, cat.output)
    }

    @Test func aCastHasTheFollowersFramesAtTheirTimesAndSize() throws {
        let (header, events, cat) = try Self.cast(Self.recording(text: Self.document), ["--size", "100x30", "--idle-limit", "3"])
        #expect(header["width"]?.double == 100 && header["height"]?.double == 30 && header["idle_time_limit"]?.double == 3)
        let times = events.map(\.0)
        #expect(times.first == 0 && zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "\(times)")
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 <= 3.0001 }, "pauses cut to the idle limit: \(times)")
        let frames = events.map(\.1).filter { $0.hasPrefix("\u{1B}[H") && $0.hasSuffix("\u{1B}[J") }
        #expect(frames.count >= 4, "one frame per change of the view: \(frames.count)")
        for frame in frames {
            let lines = frame.replacing(/\x{1B}\[[0-9;]*[mHJ]/, with: "").split(separator: "\r\n", omittingEmptySubsequences: false)
            #expect(lines.count == 30 && lines.allSatisfy { DisplayWidth.of($0) == 100 }, "\(lines.map { DisplayWidth.of($0) })")
        }
        // The presenter's place at each time: part 3, then 12, then 7, with the driver named.
        let shown = frames.map { $0.replacing(/\x{1B}\[[0-9;]*[mHJ]/, with: "") }
        #expect(shown.contains { $0.contains("Part 3") && $0.contains("driver Ann") })
        #expect(shown.contains { $0.split(separator: "\r\n").dropFirst().first?.contains("Part 12") == true })
        #expect(shown.last?.split(separator: "\r\n").dropFirst().first?.contains("Part 7") == true, "\(shown.last ?? "")")
        #expect(cat.contains("Part 12"), "asciinema cat shows the frames")
    }

    /// Issue 17's hostile text in the document reaches the cast only as pictures.
    @Test func hostileDocumentsYieldNoEscapeSequenceInTheCast() throws {
        let hostile = HostileText.attacks.joined(separator: " ")
        let text = "# Tour \(hostile)\n\n" + (1...15).map { "## Part \($0) \(hostile)\n\nBody \(hostile)" }.joined(separator: "\n\n")
        let (_, events, _) = try Self.cast(Self.recording(text: text, name: "evil\u{1B}[2J.md"), ["--size", "80x24"])
        #expect(events.count >= 3)
        for (_, data) in events { #expect(HostileText.strayControls(data).isEmpty, "\(HostileText.strayControls(data))") }
    }

    @Test func aSizeThatIsNoSizeIsAUsageError() throws {
        let refused = try run(ServerProcess.binary.path, ["play", "/nonexistent.rec", "--cast", "/tmp/x.cast", "--size", "wide"])
        #expect(refused.status == 64 && refused.output.contains("--size must be COLUMNSxROWS"), "\(refused.output)")
    }
}
