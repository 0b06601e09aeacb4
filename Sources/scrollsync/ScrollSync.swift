import ArgumentParser

@main
struct ScrollSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scrollsync",
        abstract: "Live-synchronized scrolling over WebSocket.",
        subcommands: [Serve.self, Config.self, Present.self, Follow.self, Drive.self, Load.self]
    )
}
