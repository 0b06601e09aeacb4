import ArgumentParser

/// What a command's `--help` says of `--key` and `--name`: each presenting command words them
/// for what it does (`present` binds the key as it creates the room, `replay` shows the name to
/// the room), while the options, their parsing and the query they make are the same.
protocol PresenterWording {
    static var keyHelp: String { get }
    static var nameHelp: String { get }
}

/// `--key` and `--name` of a command that joins a room as a presenter (`present`, `drive`,
/// `replay`), with the help that `Command` words for them.
struct PresenterOptions<Command: PresenterWording>: ParsableArguments {
    @Option(help: ArgumentHelp(Command.keyHelp))
    var key: String?

    @Option(help: ArgumentHelp(Command.nameHelp))
    var name: String?

    /// The query parameters a presenter joins with, `connection`'s access ones included.
    func query(_ connection: ConnectionOptions) -> [(String, String?)] {
        [("role", "presenter"), ("key", key), ("name", name)] + connection.access
    }
}
