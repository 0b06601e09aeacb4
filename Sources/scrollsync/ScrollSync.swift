import ArgumentParser

/// This build's version, for `--version` (the protocol it speaks is `scrollsync.v1`).
let scrollSyncVersion = "0.9.0 (protocol scrollsync.v1)"

@main
struct ScrollSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scrollsync",
        abstract: "Live-synchronized scrolling over WebSocket.",
        version: scrollSyncVersion,
        subcommands: [Serve.self, Config.self, Present.self, Follow.self, Drive.self, Load.self, Token.self]
    )
}
