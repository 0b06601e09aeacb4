import Foundation
import ScrollModel
@testable import scrollsync
import Testing
import TerminalUI

/// A real terminal session under tmux: a presenter at 120 columns and a follower at 60.
final class Tmux {
    let name: String

    /// A tmux server of the tests' own, apart from any the user runs.
    static let socket = ["-L", "scrollsync-tests"]

    init(_ command: [String], width: Int, height: Int) throws {
        name = "scrollsync-\(UUID().uuidString.prefix(8))"
        let line = command.map { "'\($0)'" }.joined(separator: " ") + "; sleep 60"
        // The tmux server this may start must not hold our pipes open: no output captured.
        let tmux = try Child("tmux", Self.socket + ["new-session", "-d", "-s", name, "-x", String(width), "-y", String(height), line], output: .discard)
        let status = tmux.wait(timeout: 30)
        guard status == 0 else { throw Failure("tmux new-session failed (\(status.map(String.init) ?? "timed out"))") }
    }

    deinit { _ = try? run("tmux", Self.socket + ["kill-session", "-t", name]) }

    func keys(_ keys: String...) throws { try run("tmux", Self.socket + ["send-keys", "-t", name] + keys) }

    var screen: [String] {
        ((try? run("tmux", Self.socket + ["capture-pane", "-p", "-t", name]).output) ?? "").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Waits up to `timeout` seconds for the screen to satisfy `condition`.
    @discardableResult
    func wait(timeout: TimeInterval = 10, until condition: ([String]) -> Bool) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        var lines = screen
        while !condition(lines) && Date() < deadline {
            usleep(50_000)
            lines = screen
        }
        return lines
    }
}

extension [String] {
    var header: String { first?.trimmingCharacters(in: .whitespaces) ?? "" }
    var statusLine: String { last { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? "" }
    /// The section named in the sticky header ("Title › Section"), or the title alone.
    var section: String { header.components(separatedBy: " › ").last ?? "" }
    /// The rows above the status line.
    var text: [String] { Array(prefix(while: { $0 != statusLine })) }
    var arrow: String { ["↑", "↓", "·"].first { statusLine.contains(" \($0) ") } ?? "?" }
}

@Suite("Terminal client under tmux", .serialized)
struct TerminalClientTests {
    /// Issue 17.1 under a real pty: a hostile presenter's document, headings and name carry
    /// clipboard writes (OSC 52), hidden links (OSC 8), screen clears, a cursor report request,
    /// leaving the alternate screen and a C1 CSI. The bytes the follower writes to its
    /// terminal hold none of them; the terminal shows them as text.
    @Test func hostileTextNeverReachesTheFollowersTerminalAsControls() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let room = "hostile-\(UUID().uuidString.prefix(6))"
        let hostile = "\u{1B}]52;c;cm0gLXJmIH4=\u{07} \u{1B}]8;;https://evil.example\u{07}link\u{1B}]8;;\u{07} \u{1B}[2J \u{1B}[6n \u{1B}[?1049l \u{9B}31m \u{7F}"
        // The follower is there first, so that the presenter's name reaches it in `driver`.
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent("scrollsync-pty-\(UUID().uuidString).bin").path
        let follower = try Tmux(["sh", "-c", "read go; exec \(ServerProcess.binary.path) follow \(server.url)/rooms/\(room)"], width: 80, height: 24)
        try run("tmux", Tmux.socket + ["pipe-pane", "-o", "-t", follower.name, "cat >> \(capture)"])
        try follower.keys("Enter")
        follower.wait { $0.statusLine.contains("FOLLOWING") && $0.statusLine.contains("● live") }
        let presenter = try RoomConnection(port: server.port, path: "/rooms/\(room)?role=presenter&key=k&name=Eve%1b%5d52%3bc%3baGk%3d%07")
        #expect(presenter.wait { $0.contains("\"type\":\"welcome\"") })
        presenter.send(documentMessage("# Title \(hostile)\n\nBody \(hostile)\n\n## Section \(hostile)\n\n- item \(hostile)\n\n```\ncode \(hostile)\n```\n", name: "evil.md"))
        presenter.send(#"{"type":"scroll","offset":0,"viewport":10,"content":20}"#)
        let shown = follower.wait { $0.statusLine.contains("FOLLOWING") && $0.joined().contains("Body") && $0.statusLine.contains("driver Eve") }
        #expect(shown.joined().contains("\u{241B}]52;c;"), "the clipboard write is shown as text: \(shown.joined(separator: "\n"))")
        #expect(shown.statusLine.contains("Eve\u{241B}]52"), "the name too: \(shown.statusLine)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: capture))
        let written = String(decoding: bytes, as: UTF8.self)
        for forbidden in ["\u{1B}]52", "\u{1B}]8;", "\u{1B}[6n", "\u{1B}[?1049l", "\u{9B}", "\u{07}", "\u{7F}"] {
            #expect(!written.contains(forbidden), "the follower wrote \(forbidden.debugDescription) to its terminal")
        }
        #expect(written.contains("\u{241B}[6n"), "the request is shown, not sent")
        try? FileManager.default.removeItem(atPath: capture)
    }

    static let document = peersDirectory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Examples/tour.md").path

    @Test func followerTracksThePresenterAcrossWidths() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let binary = ServerProcess.binary.path
        let room = "\(server.url)/rooms/tour-\(UUID().uuidString.prefix(6))"
        let presenter = try Tmux([binary, "present", room, Self.document, "--name", "Ann"], width: 120, height: 30)
        let follower = try Tmux([binary, "follow", room], width: 60, height: 20)
        presenter.wait { $0.statusLine.contains("PRESENTING") && $0.statusLine.contains("● live") && $0.statusLine.contains("1 follower") }
        // The driver can arrive before the document does: wait for both.
        let ready = follower.wait { $0.statusLine.contains("FOLLOWING") && $0.statusLine.contains("driver Ann") && $0.header.contains("ScrollSync Tour") }
        #expect(ready.header.contains("ScrollSync Tour"), "\(ready.joined(separator: "\n"))")

        // (key, expected arrow) — n jumps sections, j/k move a line, space pages, G/g jump to the ends.
        let steps: [(String, String)] = [("n", "↓"), ("n", "↓"), ("j", "↓"), ("Space", "↓"), ("k", "↑"), ("n", "↓"), ("G", "↓"), ("N", "↑"), ("g", "↑")]
        for (key, arrow) in steps {
            // The arrow alone may already show before the key is handled: wait for the text to move too.
            let before = presenter.screen.text
            try presenter.keys(key)
            let shown = presenter.wait(timeout: 5) { $0.arrow == arrow && $0.text != before }
            if key == "G" {
                // At the presenter's bottom every follower shows its own last line (PROTOCOL.md §3),
                // which at 60 columns is further down the document than the presenter's top section.
                let lastLine = "on narrow terminals"
                let followed = follower.wait(timeout: 5) { $0.text.contains { $0.contains(lastLine) } && $0.arrow == arrow }
                #expect(followed.text.contains { $0.contains(lastLine) }, "after G the follower's last line is on screen: \(followed.joined(separator: "\n"))")
                #expect(shown.text.contains { $0.contains(lastLine) })
                continue
            }
            let followed = follower.wait(timeout: 5) { $0.section == shown.section && $0.arrow == arrow }
            #expect(followed.section == shown.section, "after \(key): presenter shows \(shown.header), follower \(followed.header)")
            #expect(shown.arrow == arrow && followed.arrow == arrow, "after \(key): arrows \(shown.arrow) / \(followed.arrow)")
            #expect(!followed.section.isEmpty)
        }

        // The follower detaches by scrolling itself, says so, and f brings it back.
        try follower.keys("j")
        #expect(follower.wait { $0.statusLine.contains("DETACHED") }.statusLine.contains("DETACHED"))
        #expect(presenter.wait { $0.statusLine.contains("(1 detached)") }.statusLine.contains("(1 detached)"))
        try follower.keys("f")
        #expect(follower.wait { $0.statusLine.contains("FOLLOWING") }.statusLine.contains("FOLLOWING"))

        // Quitting restores the terminal; the follower hears that nobody drives.
        try presenter.keys("q")
        let after = presenter.wait { !$0.joined().contains("PRESENTING") }
        #expect(!after.joined().contains("PRESENTING"), "the alternate screen is gone after q")
        #expect(follower.wait { $0.statusLine.contains("nobody driving") }.statusLine.contains("nobody driving"))
        try follower.keys("C-c")
        #expect(!follower.wait { !$0.joined().contains("FOLLOWING") }.joined().contains("FOLLOWING"), "Ctrl-C restores the terminal")
    }
}

/// Starts `scrollsync follow URL --json`; its lines are the states it printed.
func followJSON(_ url: String) throws -> Child {
    try Child(ServerProcess.binary.path, ["follow", url, "--json"], errors: .discard)
}

/// Issue 27.12: `follow --json` says on standard error what it waits for.
@Suite("follow --json")
struct FollowJSONTests {
    @Test func anEmptyRoomIsSaidOnStandardErrorAndStatesFollowOnStandardOutput() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let room = "quiet-\(UUID().uuidString.prefix(6))"
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("follow-\(UUID().uuidString.prefix(6)).err").path
        defer { try? FileManager.default.removeItem(atPath: errors) }
        let follower = try Child("/bin/sh", ["-c", "exec \(ServerProcess.binary.path) follow \(server.url)/rooms/\(room) --json 2>\(errors)"])
        defer { follower.stop() }
        #expect(eventually { ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").contains("waiting for a presenter") },
                "standard error says what it waits for")
        #expect(follower.lines.isEmpty, "standard output holds only JSON lines: \(follower.lines)")
        try ResilienceTests().scroll(42, port: server.port, room: room)
        #expect(follower.waitForOutput { $0.contains { $0.hasPrefix("{") && $0.contains(#""offset":42"#) } }, "\(follower.lines)")
    }
}

@Suite("Client resilience")
struct ResilienceTests {
    /// Sends one scroll as a presenter over a raw socket.
    func scroll(_ offset: Int, port: Int, room: String) throws {
        let presenter = try RawClient(port: port)
        #expect(presenter.upgrade(path: "/rooms/\(room)?role=presenter").hasPrefix("HTTP/1.1 101 "))
        presenter.send(maskedFrame(0x1, Array("{\"type\":\"scroll\",\"offset\":\(offset),\"t\":1}".utf8)))
        _ = presenter.receive(atLeast: 400, timeout: 1)
    }

    /// A document that cannot be read is an error at once, with or without a terminal: a
    /// follower's `--doc` is not skipped in `--json` mode, and a directory (which opens but
    /// cannot be read) is not taken for an empty document.
    @Test func unreadableDocumentsFailAtOnce() throws {
        let result = try run(ServerProcess.binary.path, ["follow", "ws://127.0.0.1:9/rooms/x", "--doc", "/nonexistent/notes.md", "--json"], timeout: 20)
        #expect(result.status != 0)
        #expect(result.output.contains("cannot read /nonexistent/notes.md"), "\(result.output)")
        let directory = FileManager.default.temporaryDirectory.path  // opens, but cannot be read
        let present = try run(ServerProcess.binary.path, ["present", "ws://127.0.0.1:9/rooms/x", directory], timeout: 20)
        #expect(present.status != 0)
        #expect(present.output.contains("cannot read \(directory): Is a directory"), "\(present.output)")
    }

    /// A refusal that retrying cannot change (400 for a bad room name) ends the follower at
    /// once with the server's own words; a full server (503) is retried.
    @Test func aPermanentRefusalStopsTheFollowerWithTheServersReason() throws {
        let server = try ServerProcess(["--max-connections", "1"])
        let refused = try run(ServerProcess.binary.path, ["follow", "ws://127.0.0.1:\(server.port)/rooms/bad%20name", "--json"], timeout: 20)
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("HTTP 400 Bad Request: room names are 1 to 64 characters"), "\(refused.output)")
        let first = try followJSON("ws://127.0.0.1:\(server.port)/rooms/full")
        defer { first.stop() }
        // The first follower holds the only connection once the server answers others 503.
        #expect(eventually { (try? httpGet("/healthz", port: server.port))?.hasPrefix("HTTP/1.1 503") == true }, "the first follower is in")
        let second = try Child(ServerProcess.binary.path, ["follow", "ws://127.0.0.1:\(server.port)/rooms/full", "--json"])
        defer { second.stop() }
        #expect(second.waitForOutput { $0.contains { $0.contains("HTTP 503 Service Unavailable") && $0.contains("reconnecting") } }, "\(second.lines)")
        #expect(second.isRunning, "a full server is retried")
    }

    @Test func followReconnectsAfterTheServerRestartsAndResyncs() throws {
        let first = try ServerProcess()
        let port = first.port
        let room = "resilience-\(UUID().uuidString.prefix(6))"
        let follower = try followJSON("ws://127.0.0.1:\(port)/rooms/\(room)")
        defer { follower.stop() }

        #expect(eventually { (try? metricValue("scrollsync_room_members{role=\"follower\"}", port: port)) == 1 }, "the follower is in")
        try scroll(5, port: port, room: room)
        #expect(follower.waitForOutput { $0.contains { $0.contains("\"offset\":5,") } }, "first state: \(follower.lines)")
        first.stop()

        let second = try ServerProcess(["--port", String(port)])  // the same port
        #expect(second.port == port)
        // Reconnected followers count in presence; a state from the new server reaches them.
        var delivered = false
        for _ in 0..<20 where !delivered {
            try scroll(9, port: port, room: room)
            delivered = follower.waitForOutput(timeout: 0.5) { $0.contains { $0.contains("\"offset\":9,") } }
        }
        #expect(delivered, "after the restart: \(follower.lines)")
        #expect(follower.isRunning, "the follower kept running through the outage")
    }
}

@Suite("scrollsync drive")
struct DriveTests {
    @Test func scriptDrivesTheRoomWhileFollowJSONRecordsIt() throws {
        let server = try ServerProcess()
        let room = "\(server.url)/rooms/drive-\(UUID().uuidString.prefix(6))"
        let follower = try followJSON(room)
        defer { follower.stop() }

        let talk = "# Talk\n\n" + (1...30).map { "Paragraph \($0) of the introduction, long enough to wrap at eighty columns of a terminal." }
            .joined(separator: "\n\n") + "\n\n## Install\n\nFirst the install step.\n\nThen the second.\n\n## Close\n\n"
            + (1...20).map { "Closing paragraph \($0)." }.joined(separator: "\n\n") + "\n"
        let document = FileManager.default.temporaryDirectory.appendingPathComponent("talk-\(UUID().uuidString.prefix(6)).md")
        try talk.write(to: document, atomically: true, encoding: .utf8)
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("drive-\(UUID().uuidString).txt")
        try """
        expect followers >= 1
        share \(document.path)
        scroll 10
        sleep 100ms
        by 5
        sleep 100ms
        goto install 0.5
        sleep 100ms
        sweep 0 90 300ms 20
        """.write(to: script, atomically: true, encoding: .utf8)
        let result = try run(ServerProcess.binary.path, ["drive", room, "--script", script.path, "--viewport", "10", "--content", "100"])
        #expect(result.status == 0, "\(result.output)")
        #expect(follower.waitForOutput { $0.last?.contains("\"offset\":90,") == true }, "\(follower.lines)")
        let states = follower.lines.compactMap { line -> (seq: Int, offset: String)? in
            guard let seq = line.firstMatch(of: /"seq":(\d+)/)?.1, let offset = line.firstMatch(of: /"offset":([0-9.]+)/)?.1 else { return nil }
            return (Int(seq)!, String(offset))
        }
        // goto puts the block (half way in) at the top of a 10-row view of the document at 80 columns.
        let layout = Layout(document: Document(text: talk, format: .markdown, name: "talk.md"), width: 80)
        let installRow = try #require(layout.row(for: Anchor(id: "install", fraction: 0.5)))
        #expect(installRow > 15 && installRow < layout.rowCount - 10)
        #expect(Array(states.prefix(3).map(\.offset)) == ["10", "15", String(installRow)], "scroll, by, goto: \(states)")
        #expect(follower.lines[2].contains("\"anchor\":{\"id\":\"install\",\"fraction\":0.5}"))
        #expect(follower.lines[2].contains("\"atTop\":false") && follower.lines[2].contains("\"content\":\(layout.rowCount)"), "\(follower.lines[2])")
        #expect(follower.lines[1].contains("\"progress\":0.16666"), "progress from the viewport and content")

        // An id the shared document does not have is refused, naming the line.
        try "share \(document.path)\ngoto nosuch-id\n".write(to: script, atomically: true, encoding: .utf8)
        let unknown = try run(ServerProcess.binary.path, ["drive", room, "--script", script.path], timeout: 30)
        #expect(unknown.status != 0)
        #expect(unknown.output.contains("line 2: goto nosuch-id: the shared document has no block with that id"), "\(unknown.output)")
        #expect(zip(states, states.dropFirst()).allSatisfy { $0.seq < $1.seq })
        #expect(states.count >= 6, "the sweep's states arrive: \(states)")

        // A refused command fails the run and names its line.
        try "release\nscroll 5\n".write(to: script, atomically: true, encoding: .utf8)
        let refused = try run(ServerProcess.binary.path, ["drive", room, "--script", script.path], timeout: 30)
        #expect(refused.status != 0)
        #expect(refused.output.contains("line 2: this presenter does not drive the room: put a `take` line before it"), "\(refused.output)")
        try "scroll 1\nwobble\n".write(to: script, atomically: true, encoding: .utf8)
        let invalid = try run(ServerProcess.binary.path, ["drive", room, "--script", script.path], timeout: 30)
        #expect(invalid.status != 0)
        #expect(invalid.output.contains("line 2: unknown command 'wobble'"), "\(invalid.output)")
    }
}

/// Issue 18.9: help that reads as prose, and usage errors that name the command.
@Suite("Command line")
struct CommandLineTests {
    /// Help text is wrapped greedily at word boundaries: within a paragraph, no line could
    /// have taken the next line's first word.
    @Test(arguments: ["serve", "load", "drive", "follow", "present", "config"])
    func helpWrapsAtWordBoundaries(command: String) throws {
        // What `scrollsync COMMAND --help` prints without a terminal: wrapped at 80 columns,
        // leaving the last one free.
        let subcommand = try #require(ScrollSync.configuration.subcommands.first { $0._commandName == command })
        let lines = ScrollSync.helpMessage(for: subcommand, columns: 80).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let overview = lines.prefix { !$0.hasPrefix("USAGE:") }
        #expect(!overview.isEmpty && overview.allSatisfy { $0.count < 80 }, "\(overview)")
        for (line, next) in zip(overview, overview.dropFirst()) where !line.isEmpty && !next.isEmpty && !next.hasPrefix(" ") {
            let word = next.prefix { $0 != " " }
            #expect(line.count + 1 + word.count >= 80, "\(command) --help breaks early: \(line.debugDescription) then \(word)")
        }
    }

    /// A URL that names no room is a usage error: status 64, the reason, and the command's
    /// own usage (not the top-level one); a file that cannot be read is a plain failure.
    @Test func usageErrorsNameTheCommand() throws {
        for (command, args) in [("follow", ["http://example/rooms/a"]), ("follow", ["ws://127.0.0.1:9/rooms/a", "extra"]),
                                ("present", ["ws://127.0.0.1:9/lobby", "notes.md"]), ("drive", ["ws://127.0.0.1:9/"])] {
            let result = try run(ServerProcess.binary.path, [command] + args, timeout: 20)
            #expect(result.status == 64, "\(command) \(args): \(result.output)")
            #expect(result.output.contains("Usage: scrollsync \(command) "), "\(command) \(args): \(result.output)")
            #expect(result.output.contains("ws://") && result.output.contains("scrollsync: error: ") && !result.output.contains("Error: "), "\(result.output)")
        }
        let missing = try run(ServerProcess.binary.path, ["present", "ws://127.0.0.1:9/rooms/a", "/nonexistent/notes.md"], timeout: 20)
        #expect(missing.status == 1)
        #expect(missing.output.contains("scrollsync: error: cannot read /nonexistent/notes.md") && !missing.output.contains("Usage:"), "\(missing.output)")
        // A configuration that does not hold stops `serve` and `config check` with EX_CONFIG (78),
        // saying why (what each check says: ConfigurationTests).
        let badFile = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString).json").path
        try #"{"limits":{"conections":5}}"#.write(toFile: badFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: badFile) }
        for command in [["config", "check", badFile], ["serve", "--config", badFile, "--port", "0", "--in-memory"]] {
            let result = try run(ServerProcess.binary.path, command, timeout: 30)
            #expect(result.status == 78, "\(command): \(result.output)")
            #expect(result.output.contains("configuration: \(badFile): unknown key limits.conections"), "\(command): \(result.output)")
        }
        let version = try run(ServerProcess.binary.path, ["--version"], timeout: 20)
        #expect(version.status == 0 && version.output.contains("scrollsync.v1"), "\(version.output)")
    }
}
