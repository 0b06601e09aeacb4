import ArgumentParser
import ScrollModel
import SyncClient
import TerminalUI
import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Options shared by `present` and `follow`.
struct ConnectionOptions: ParsableArguments {
    @Flag(help: "Accept any TLS certificate (self-signed test servers).")
    var insecure = false

    @Option(help: "Extra CA certificate file (PEM) for wss://.")
    var caFile: String?

    @Flag(help: "Do not offer permessage-deflate.")
    var noCompress = false

    @Option(help: "A private room's follow key. Followers need it; a presenter who gives it makes the room private with it.")
    var followKey: String?

    @Option(help: "A signed token from the application that hosts the room (scrollsync token); it admits you in its role without a key.")
    var token: String?

    /// The query parameters that carry the access options.
    var access: [(String, String?)] { [("followKey", followKey), ("token", token)] }

    /// A presenter's `--follow-key` makes the room private; the server takes it only from a
    /// presenter who proves itself (the room's presenter key, or a presenter token), so it is
    /// refused here first, with the reason, before anything connects.
    func checkFollowKey(presenterKey key: String?) throws {
        guard let followKey, !followKey.isEmpty, key?.isEmpty ?? true, token?.isEmpty ?? true else { return }
        throw ValidationError("--follow-key makes the room private and needs --key (the room's presenter key) or --token (a presenter token): "
            + "without one, anyone could present the private room")
    }

    var clientOptions: RoomClient.Options {
        var options = RoomClient.Options()
        options.verifyTLS = !insecure
        options.caFile = caFile
        options.deflate = !noCompress
        return options
    }
}

/// `text` as a WebSocket URL, or a usage error that says what is wrong with it.
func webSocketURL(_ text: String) throws -> WebSocketURL {
    do {
        return try WebSocketURL(parsing: text)
    } catch {
        throw ValidationError("not a WebSocket URL: \(SafeText.display(text)): \(error)")
    }
}

/// `ws://host:port/rooms/NAME` plus the query for this session; fails with a clear message.
func roomURL(_ text: String, query: [(String, String?)]) throws -> (WebSocketURL, String) {
    let url = try webSocketURL(text)
    let path = url.target.split(separator: "?", maxSplits: 1)[0]
    guard path.hasPrefix("/rooms/"), path.count > 7 else {
        throw ValidationError("the URL must name a room: ws://HOST:PORT/rooms/NAME (got \(url.target))")
    }
    let encoded = query.compactMap { name, value in value.map { "\(name)=\(WebSocketURL.percentEncoded($0))" } }
    let existing = url.target.contains("?") ? String(url.target.split(separator: "?", maxSplits: 1)[1]) : ""
    let all = ([existing].filter { !$0.isEmpty } + encoded).joined(separator: "&")
    return (url.with(target: String(path) + (all.isEmpty ? "" : "?" + all)), String(path.dropFirst(7)))
}

/// A failure that is not a usage error: said in one line, exit status 1, no usage printed.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The bytes of the file at `path`, at most `limit` of them (more is a failure that says so).
func readFile(_ path: String, atMost limit: Int = .max) throws(CommandFailure) -> [UInt8] {
    let bytes: [UInt8]?
    do {
        bytes = try readWholeFile(path, atMost: limit)
    } catch {
        if error.errno == EFBIG { throw CommandFailure("\(path) is larger than \(limit >> 20) MiB") }
        throw CommandFailure("cannot read \(path): \(String(cString: strerror(error.errno)))")  // a directory: EISDIR
    }
    guard let bytes else { throw CommandFailure("cannot read \(path): \(String(cString: strerror(ENOENT)))") }
    return bytes
}

func readDocument(_ path: String) throws -> (name: String, format: SharedDocument.Format, text: String) {
    let bytes = try readFile(path)
    guard let text = String(validating: bytes, as: UTF8.self) else { throw CommandFailure("\(path) is not UTF-8 text") }
    let name = String(path.split(separator: "/").last ?? Substring(path))
    let lower = name.lowercased()
    let format: SharedDocument.Format = lower.hasSuffix(".md") || lower.hasSuffix(".markdown") ? .markdown : .text
    return (name, format, text)
}

extension ConnectionStatus {
    init(_ status: RoomClient.Status) {
        switch status {
        case .connecting: self = .connecting
        case .connected: self = .connected
        case .waiting(let delay, let reason): self = .waiting(retryIn: delay, reason: reason)
        case .refused(let reason): self = .refused(reason: reason)
        case .stopped: self = .stopped
        }
    }
}

/// Runs a viewer against a room until the user quits; a session the server refused for good
/// (a bad room name, a wrong key) exits with status 1 once the user has read why. A presenter
/// `watching` its file shares each saved version.
func runViewer(model: ViewerModel, urls: [WebSocketURL], options: RoomClient.Options, watching file: String? = nil) throws {
    let group = try EventLoopGroup(count: 1)
    group.start()
    let box = AppBox()
    let client = try RoomClient(urls: urls, loop: group.loops[0], options: options) { event in
        switch event {
        case .status(let status): box.app?.post(.connection(ConnectionStatus(status)))
        case .message(let message): box.app?.post(.server(message))
        case .roundTrip(let milliseconds): box.app?.post(.roundTrip(milliseconds: milliseconds))
        }
    }
    let app = TerminalApp(model: model) { client.send($0) }
    box.app = app
    let watcher = file.map { DocumentWatcher(path: $0, loop: group.loops[0], app: app) }
    client.start()
    app.run()
    watcher?.stop()
    client.stopAndWait()
    group.shutdown()
    if case .refused(let reason) = app.model.connection {
        logError("refused: \(reason)")
        throw ExitCode(1)
    }
}

final class AppBox: @unchecked Sendable {
    var app: TerminalApp?
}

struct Present: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Present a document: show it full-screen and drive a room with it.",
        discussion: "Keys: j/k or ↓/↑ (a line), space/PgDn and b/PgUp (a page), g/Home and G/End (top/bottom), n/N (next/previous heading), / and ? (search forward/backward: type a pattern, Enter jumps to the next match and highlights it, an empty pattern repeats the last, Esc cancels; the room moves with you), t (take control), f (follow the driver again after scrolling alone while another presenter drives), h or F1 (show the keys; any key hides them), q or Ctrl-C (quit). When the file changes on disk, the room gets the new version and keeps its place (the block at the top, or the nearest one left).")

    @OptionGroup var room: RoomArgument<Present>

    @Argument(help: "The document: Markdown (.md) or plain text.")
    var file: String

    @OptionGroup var presenter: PresenterOptions<Present>

    @Option(help: "The same room on another node (servers sharing rooms through Redis), tried in turn when the connection drops; repeat for more.")
    var also: [String] = []

    @Flag(help: "Have the server record the room (download it later: GET /rooms/NAME/recording?key=…).")
    var record = false

    @OptionGroup var connection: ConnectionOptions

    /// Usage errors (a URL that names no room, a follow key without a key) with this command's
    /// usage, before anything runs.
    func validate() throws {
        for text in also { _ = try roomURL(text, query: []) }
        try connection.checkFollowKey(presenterKey: presenter.key)
    }

    func run() throws {
        let document = try readDocument(file)
        let query = presenter.query(connection) + [("record", record ? "1" : nil)]
        let others = try also.map { try roomURL($0, query: query).0 }
        let (primary, name) = try room.joining(query)
        guard Terminal.isInteractive else { throw CommandFailure("present needs a terminal") }
        let size = Terminal.size
        let model = ViewerModel.presenter(room: name, name: document.name, format: document.format, text: document.text,
                                          width: size.width, height: size.height)
        try runViewer(model: model, urls: [primary] + others, options: connection.clientOptions, watching: file)
    }
}

extension Present: RoomWording, PresenterWording {
    static let roomHelp = "The room, e.g. ws://127.0.0.1:8080/rooms/demo"
    static let keyHelp = "The room's presenter key (binds it when you create the room)."
    static let nameHelp = "Your name, shown to followers."
}

struct Follow: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow a room: render its document and scroll with the presenter.",
        discussion: "Scrolling yourself (j/k or ↓/↑, space/PgDn, b/PgUp, g/Home, G/End, n/N) or searching (/ or ? then a pattern and Enter; an empty pattern repeats the last, Esc cancels) detaches; f follows again; h or F1 shows the keys; q or Ctrl-C quits. Without a terminal, or with --json, prints each state as one JSON line.")

    @Argument(help: "The room, e.g. ws://127.0.0.1:8080/rooms/demo; more URLs are tried in turn.")
    var urls: [String]

    @Option(help: "Render this local copy instead of the room's document (flagged when it differs).")
    var doc: String?

    @Option(help: "Your name.")
    var name: String?

    @Flag(help: "Print each state as a JSON line instead of rendering.")
    var json = false

    @OptionGroup var connection: ConnectionOptions

    /// Usage errors (a URL that names no room) with this command's usage, before anything runs.
    func validate() throws {
        for text in urls { _ = try roomURL(text, query: []) }
    }

    func run() throws {
        let parsed = try urls.map { try roomURL($0, query: [("role", "follower"), ("name", name)] + connection.access) }
        let local = try doc.map(readDocument).map { Document(text: $0.text, format: $0.format, name: $0.name) }  // a bad --doc fails either way
        if json || !Terminal.isInteractive {
            try printStates(urls: parsed.map(\.0))
            return
        }
        let size = Terminal.size
        let model = ViewerModel.follower(room: parsed[0].1, localDocument: local, width: size.width, height: size.height)
        try runViewer(model: model, urls: parsed.map(\.0), options: connection.clientOptions)
    }

    /// For pipes and scripts: one JSON line per state (the welcome's state included).
    private func printStates(urls: [WebSocketURL]) throws {
        let signals = blockTerminationSignals()
        let group = try EventLoopGroup(count: 1)
        group.start()
        let client = try RoomClient(urls: urls, loop: group.loops[0], options: connection.clientOptions) { event in
            var state: ScrollState?
            switch event {
            case .message(.welcome(let welcome)):
                state = welcome.state
                // Standard output has nothing to say yet: standard error says why.
                if welcome.state == nil {
                    log(welcome.driver == nil ? "joined room \(welcome.room): waiting for a presenter (nobody presents yet); states follow as JSON lines"
                                              : "joined room \(welcome.room): waiting for the presenter's first move", to: STDERR_FILENO)
                }
            case .message(.state(let next)): state = next
            case .status(.waiting(_, let reason)): log("disconnected (\(reason)); reconnecting", to: STDERR_FILENO)
            case .status(.refused(let reason)): fail(reason)  // retrying cannot help
            default: break
            }
            if let state { writeLine(ServerMessage.state(state)) }
        }
        client.start()
        waitForTermination(signals)
        client.stopAndWait()
        group.shutdown()
    }
}

/// Writes one line to standard output at once.
func writeLine(_ bytes: [UInt8]) {
    let line = bytes + [10]
    writeAll(STDOUT_FILENO, line)
}
