import ArgumentParser
import SyncClient

/// What a command's `--help` says of its room argument.
protocol RoomWording {
    static var roomHelp: String { get }
}

/// The one room a command joins (`present`, `drive`, `replay`, `record`): a WebSocket URL that
/// names a room, checked before anything runs, so a bad one is a usage error with the
/// command's usage.
struct RoomArgument<Command: RoomWording>: ParsableArguments {
    @Argument(help: ArgumentHelp(Command.roomHelp))
    var url: String

    func validate() throws { _ = try roomURL(url, query: []) }

    /// The URL to connect to, with `query` added, and the room's name.
    func joining(_ query: [(String, String?)]) throws -> (url: WebSocketURL, room: String) {
        try roomURL(url, query: query)
    }
}
