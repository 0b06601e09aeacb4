import TextSafety
import ArgumentParser
import ScrollModel
import Synchronization
import SyncClient
import TerminalUI
import Transport
#if canImport(Glibc)
import Glibc
#endif

struct Drive: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A scripted presenter: drive a room from a script.",
        discussion: """
        One command per line (# comments): scroll OFFSET, by DELTA, goto ID [FRACTION], \
        sweep FROM TO DURATION [HZ], sleep DURATION, share FILE, take, release, \
        expect followers >= N. Without --script, commands come from standard input:
          echo "sweep 0 5000 10s 60" | scrollsync drive ws://127.0.0.1:8080/rooms/demo
        Errors name the line; the exit status is non-zero on any error.
        """)

    @OptionGroup var room: RoomArgument<Drive>

    @Option(help: "Script file, or - for standard input (the default).")
    var script: String?

    @OptionGroup var presenter: PresenterOptions<Drive>

    @Option(help: "Viewport sent with each scroll (enables progress); goto lays the document out for this many rows (24 when not given).")
    var viewport: Double?

    @Option(help: "Columns the document is laid out at for goto (block ids are the same at every width; rows are not).")
    var width = 80

    @Option(help: "Content extent sent with each scroll (enables progress).")
    var content: Double?

    @Option(help: "Seconds an expect waits before failing.")
    var expectTimeout = 10.0

    @OptionGroup var connection: ConnectionOptions

    /// A URL that names no room, or a follow key without a presenter key or token, is a usage
    /// error, with this command's usage.
    func validate() throws {
        try connection.checkFollowKey(presenterKey: presenter.key)
    }

    func run() throws {
        let text = try script.flatMap { $0 == "-" ? nil : $0 }.map { try readDocument($0).text } ?? readStandardInput()
        let parsed: DriveScript
        do {
            parsed = try DriveScript(text)
        } catch {
            fail("\(error)")
        }
        let roomURL = try self.room.joining(presenter.query(connection)).url  // `room` below is what the driver hears
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.shutdown() }
        let room = DriverState()
        let client = try RoomClient(urls: [roomURL], loop: group.loops[0], options: connection.clientOptions) { room.handle($0) }
        client.start()
        defer { client.stopAndWait() }
        // A refusal (a wrong key, a follower's token) ends the wait at once with its reason.
        guard room.waitFor(timeout: 10, { $0.joined || $0.refused != nil }), room.snapshot.joined else {
            let snapshot = room.snapshot
            if let refused = snapshot.refused { fail("\(roomURL.redacted) refused: \(SafeText.display(refused))") }
            fail("could not join \(roomURL.redacted): \(SafeText.display(snapshot.problem ?? "no answer in 10 s"))")
        }
        var offset = 0.0
        func scroll(_ to: Double, anchor: Anchor? = nil, viewport: Double? = viewport, content: Double? = content) {
            offset = max(0, to)
            client.send(.scroll(ScrollUpdate(offset: offset, viewport: viewport, content: content, anchor: anchor, t: String(wallClockMs()))))
        }
        /// The document `goto` places blocks of: the last one this script shared, else the room's.
        var shared: Document?
        for line in parsed.lines {
            room.currentLine = line.number
            switch line.command {
            case .scroll(let to): scroll(to)
            case .by(let delta): scroll(offset + delta)
            case .goto(let id, let fraction):
                // The block at the top of a view of this document at --width and --viewport:
                // its row is the offset, and the layout gives the extent, so that the state's
                // progress and ends are right and followers map it by the block's id.
                // The room's document follows its welcome as a message of its own: wait for it.
                if shared == nil, room.snapshot.documentAnnounced {
                    _ = room.waitFor(timeout: expectTimeout) { $0.document != nil }
                }
                guard let document = shared ?? room.snapshot.document.map({ Document(text: $0.text, format: $0.format, name: $0.name) }) else {
                    fail("line \(line.number): goto \(id): no document to find it in (share one first, or join a room that has one)")
                }
                let layout = Layout(document: document, width: max(1, width))
                let anchor = Anchor(id: id, fraction: fraction)
                guard let row = layout.row(for: anchor) else {
                    fail("line \(line.number): goto \(id): the shared document has no block with that id")
                }
                let rows = viewport ?? 24
                let extent = Double(layout.rowCount)
                scroll(min(Double(row), max(0, extent - rows)), anchor: anchor, viewport: rows, content: extent)
            case .sweep(let from, let to, let seconds, let hz):
                let steps = max(1, Int((seconds * hz).rounded()))
                let start = wallClockMs()
                for step in 0...steps {
                    let due = start + Int64(Double(step) / hz * 1000)
                    let wait = due - wallClockMs()
                    if wait > 0 { pause(seconds: Double(wait) / 1000) }
                    scroll(from + (to - from) * Double(step) / Double(steps))
                    if room.snapshot.error != nil { break }
                }
            case .sleep(let seconds): pause(seconds: seconds)
            case .share(let path):
                let document: (name: String, format: SharedDocument.Format, text: String)
                do { document = try readDocument(path) } catch { fail("line \(line.number): \(error)") }
                client.send(.document(name: document.name, format: document.format, text: document.text))
                shared = Document(text: document.text, format: document.format, name: document.name)
            case .take: client.send(.control(take: true))
            case .release: client.send(.control(take: false))
            case .expectFollowers(let comparison, let bound):
                let met = room.waitFor(timeout: expectTimeout) { comparison.holds($0.followers, bound) }
                if !met {
                    fail("line \(line.number): expected followers \(comparison.rawValue) \(bound) within \(expectTimeout) s, saw \(room.snapshot.followers)")
                }
            }
            if let error = room.snapshot.error { fail(error) }
        }
        usleep(200_000)  // an error answering the last command arrives within this
        if let error = room.snapshot.error { fail(error) }
    }
}

extension Drive: RoomWording, PresenterWording {
    static let roomHelp = "The room, e.g. ws://127.0.0.1:8080/rooms/demo"
    static let keyHelp = "The room's presenter key."
    static let nameHelp = "Your name."
}

/// Sleeps `seconds` (any length `DriveScript` allows: usleep's 32-bit microseconds end at 71 minutes).
func pause(seconds: Double) {
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// What the driver has heard from the room; updated on the client's loop, read by the script.
final class DriverState: @unchecked Sendable {
    struct Snapshot {
        var joined = false
        var followers = 0
        /// The room's document, as announced.
        var document: SharedDocument?
        /// The welcome said the room has a document (it comes in a message of its own).
        var documentAnnounced = false
        var problem: String?
        var error: String?
        /// The server refused the connection for good, and why.
        var refused: String?
    }

    private let state = Mutex(Snapshot())
    private let line = Atomic<Int>(0)

    var currentLine: Int {
        get { line.load(ordering: .relaxed) }
        set { line.store(newValue, ordering: .relaxed) }
    }

    var snapshot: Snapshot { state.withLock { $0 } }

    func handle(_ event: RoomClient.Event) {
        let line = currentLine
        state.withLock { snapshot in
            switch event {
            case .message(.welcome(let welcome)):
                snapshot.joined = true
                snapshot.followers = welcome.presence.followers
                snapshot.documentAnnounced = welcome.doc != nil
            case .message(.presence(let presence)):
                snapshot.followers = presence.followers
            case .message(.document(let document)):
                snapshot.document = document
            case .message(.error("not_driver", _)):
                // The server's words are for raw clients ("send {…control…} first"): a script says `take`.
                snapshot.problem = "not_driver: this presenter does not drive the room"
                if snapshot.joined, snapshot.error == nil {
                    snapshot.error = "line \(line): this presenter does not drive the room: put a `take` line before it"
                }
            case .message(.error(let code, let message)):
                snapshot.problem = "\(code): \(message)"
                if snapshot.joined, snapshot.error == nil { snapshot.error = "line \(line): the server answered \(code): \(message)" }
            case .status(.refused(let reason)):
                snapshot.refused = reason
            case .status(.waiting(_, let reason)):
                snapshot.problem = snapshot.problem ?? reason
                if snapshot.joined, snapshot.error == nil { snapshot.error = "line \(line): connection lost (\(reason))" }
            default:
                break
            }
        }
    }

    /// Polls until `condition` holds or `timeout` seconds pass.
    func waitFor(timeout: Double, _ condition: (Snapshot) -> Bool) -> Bool {
        let deadline = wallClockMs() + Int64(timeout * 1000)
        while wallClockMs() < deadline {
            if condition(snapshot) { return true }
            usleep(20_000)
        }
        return condition(snapshot)
    }
}

func readStandardInput() -> String {
    var bytes = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(STDIN_FILENO, &chunk, chunk.count)
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Prints `message` as an error on standard error and exits with status 1.
func fail(_ message: String) -> Never {
    logError(message)
    exit(1)
}
