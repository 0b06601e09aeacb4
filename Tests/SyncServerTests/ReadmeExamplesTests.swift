import Foundation
import Testing

/// Issue 27: the README's examples work as written. `Scripts/readme-examples` runs, in order,
/// every one that runs on one machine without a terminal; this test runs the script and checks
/// that every command line in the README's `sh` blocks is in it (with the server's address
/// for 127.0.0.1:8080) or named here with the reason it is not.
@Suite("The README's examples")
struct ReadmeExamplesTests {
    static let readme = ConfigurationTests.repository.appendingPathComponent("README.md")
    static let script = ConfigurationTests.repository.appendingPathComponent("Scripts/readme-examples")

    /// Commands the script does not run, and why.
    static let elsewhere: [String: String] = [
        "swift run -c release scrollsync serve": "the set-up; the script starts the same server (in memory, on a free port)",
        "Scripts/test": "the test command itself",
        "python3 -m websockets 'ws://127.0.0.1:8080/rooms/demo?role=presenter&key=s3cret'": "interactive; the script pipes the README's scroll line into it",
        "scrollsync present ws://127.0.0.1:8080/rooms/demo Examples/tour.md --key s3cret --name Ann": "needs a terminal: the tmux tests",
        "scrollsync follow  ws://127.0.0.1:8080/rooms/demo": "needs a terminal: the tmux tests",
        "scrollsync follow  ws://127.0.0.1:8080/rooms/demo --doc my-copy.md": "needs a terminal and the reader's own copy",
        "scrollsync follow  ws://127.0.0.1:8080/rooms/demo --json | jq .progress": "jq is not a dependency; the script runs follow --json itself",
        #"scrollsync present ws://127.0.0.1:8080/rooms/board Examples/tour.md --key s3cret --follow-key "$(openssl rand -hex 16)""#: "needs a terminal: PrivateRoomTests in process",
        "scrollsync follow  ws://127.0.0.1:8080/rooms/board --follow-key THAT-KEY": "needs a terminal and the key shown by the line above",
        "SCROLLSYNC_AUTH_SECRET=$(cat /etc/scrollsync/secret) scrollsync token board --role follower --ttl 2h --name Guest":
            "reads the operator's secret file; the script mints the same token with a secret of its own",
        "scrollsync load ws://a:8080 ws://b:8080 --followers 1000": "two machines: the cluster tests",
        "scrollsync play talk.rec": "needs a terminal: RecordReplayTests plays a recording under tmux",
        "scrollsync serve --host 0.0.0.0 --port 8080 --redis redis://10.0.0.5:6379/0": "another machine's Redis: the cluster tests",
        "swift build -c release && .build/release/scrollsync serve --port 9001 &": "the conformance run of .ci/run",
        "../shared/tools/autobahn/run ws://127.0.0.1:9001/echo": "the conformance run of .ci/run",
        "Scripts/package": "the package run of .ci/run (Scripts/test-package)",
        "sudo dpkg -i dist/scrollsync_*_amd64.deb": "Scripts/test-package installs and purges the package where CI runs as root",
        "sudo systemctl enable --now scrollsync": "needs systemd as init: Scripts/test-package verifies the unit, ServiceTests its READY=1",
        "sudo systemctl reload scrollsync": "needs systemd as init: ServiceTests sends the same SIGHUP",
        "sudo runuser -u scrollsync -- scrollsync serve --config /etc/scrollsync/scrollsync.json":
            "needs the .deb installed: Scripts/test-package runs it as root (on a free port) and purges after",
    ]

    /// The command lines of the README's `sh` blocks, trailing comments dropped.
    static func commands() throws -> [String] {
        let text = try String(contentsOf: readme, encoding: .utf8)
        var inBlock = false
        var lines = [String]()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inBlock = line == "```sh"; continue }
            guard inBlock, !line.isEmpty else { continue }
            let command = line.range(of: "   #").map { String(line[..<$0.lowerBound]) } ?? String(line)
            lines.append(command.trimmingCharacters(in: .whitespaces))
        }
        return lines
    }

    @Test func everyCommandIsRunOrSaysWhyNot() throws {
        let script = try String(contentsOf: Self.script, encoding: .utf8)
        let commands = try Self.commands()
        #expect(commands.count >= 15, "\(commands)")
        for command in commands where Self.elsewhere[command] == nil {
            // A line typed into an interactive client (`> {...}`) is what the script sends it.
            let typed = command.hasPrefix("> ") ? String(command.dropFirst(2)) : command
            let here = typed.replacingOccurrences(of: "127.0.0.1:8080", with: "$host")
            #expect(script.contains(here), "README's `\(command)` is not run by Scripts/readme-examples (\(here))")
        }
    }

    @Test func theExamplesRunInOrder() throws {
        /// Processes of the binary running now (the script must leave none of its own behind).
        func running() throws -> Set<String> {
            Set(try run("pgrep", ["-f", ServerProcess.binary.path]).output.split(separator: "\n").map(String.init))
        }
        let before = try running()
        let result = try run(Self.script.path, [], environment: ["EXAMPLES_BIN": ServerProcess.binary.path], timeout: 600)
        #expect(result.status == 0, "\(result.output.suffix(2000))")
        #expect(result.output.contains("readme-examples: all examples ran"))
        let left = try running().subtracting(before)
        // Other tests run binaries meanwhile: a process of the script's is one still running now.
        let script = try left.filter { pid in
            try run("ps", ["-o", "args=", "-p", pid]).output.contains("/rooms/demo --json")
        }
        #expect(script.isEmpty, "the script left processes running: \(script)")
    }
}
