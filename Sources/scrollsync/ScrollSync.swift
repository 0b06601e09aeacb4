import ArgumentParser
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// This build's version, for `--version` (the protocol it speaks is `scrollsync.v1`).
let scrollSyncVersion = "0.9.0 (protocol scrollsync.v1)"

@main
struct ScrollSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scrollsync",
        abstract: "Live-synchronized scrolling over WebSocket.",
        version: scrollSyncVersion,
        subcommands: [Serve.self, Config.self, Present.self, Follow.self, Drive.self, Load.self, Record.self, Play.self, Replay.self, Token.self]
    )

    /// Runs the command; errors say `scrollsync: error: …` (a usage error with the command's
    /// usage below), as the commands' own errors do, instead of the parser's `Error: …`.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }  // --help, --version
            let message = fullMessage(for: error)
            if !message.isEmpty {
                // The reason (which may quote what the user typed: shown safely), then the usage.
                let text = message.hasPrefix("Error: ") ? message.dropFirst("Error: ".count) : message[...]
                let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
                logError(String(lines[0]))
                if lines.count > 1 {
                    let usage = Array((lines[1] + "\n").utf8)
                    writeAll(STDERR_FILENO, usage)
                }
            }
            Glibc.exit(code.rawValue)
        }
    }
}
