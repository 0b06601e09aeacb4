import ArgumentParser
import Dispatch
import ScrollModel
import Synchronization
import SyncClient
import TerminalFrames
import TerminalUI
import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// `scrollsync record`: joins a room as a follower and writes what the room sends, with its
/// times, as a recording (Protocol/RECORDING.md).
struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record a room: what the presenter does, at its times, as JSON lines (Protocol/RECORDING.md).",
        discussion: "Joins as a follower (the room counts the recorder as one) and writes until the room closes, --duration ends or Ctrl-C; the file is complete on any of them. Progress goes to standard error.")

    @OptionGroup var room: RoomArgument<Record>

    @Option(name: .shortAndLong, help: "The file to write: replaced, once the room has been joined, by the new recording (never by an empty one).")
    var output: String

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @OptionGroup var connection: ConnectionOptions

    func validate() throws {
        if let duration, !(duration > 0 && duration <= Recording.maxSeconds) {
            throw ValidationError("--duration must be more than 0 and at most \(Int(Recording.maxSeconds)) seconds")
        }
    }

    func run() throws {
        let (roomURL, name) = try room.joining(connection.access)
        // Written beside the output and renamed over it at the end, so a recording that never
        // joined (a refused key, a server that is down) leaves an existing file as it was.
        var template = Array((output + ".partial-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { fail("cannot write \(SafeText.display(output)): \(String(cString: strerror(errno)))") }
        let partial = String(cString: template)
        fchmod(fd, 0o644)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let recorder = Recorder(fd: fd, room: name, url: roomURL.withoutSecrets)
        let signals = blockTerminationSignals()
        let group = try EventLoopGroup(count: 1)
        group.start()
        let client = try RoomClient(urls: [roomURL], loop: group.loops[0], options: connection.clientOptions) { recorder.handle($0) }
        client.start()
        let deadline = duration.map { monotonicNanoseconds() + UInt64($0 * 1e9) }
        // Woken by Ctrl-C (or SIGTERM), and once a second to say how far it got.
        while !recorder.ended {
            let left = deadline.map { Int64($0) - Int64(monotonicNanoseconds()) } ?? 1_000_000_000
            guard left > 0 else { break }
            var wait = timespec(tv_sec: 0, tv_nsec: Int(min(left, 1_000_000_000) % 1_000_000_000))
            if min(left, 1_000_000_000) == 1_000_000_000 { wait = timespec(tv_sec: 1, tv_nsec: 0) }
            var set = signals
            if sigtimedwait(&set, nil, &wait) > 0 { break }
            log(recorder.progress, to: STDERR_FILENO)
        }
        client.stopAndWait()
        group.shutdown()
        let wrote = fsync(fd) == 0 || errno == EINVAL
        close(fd)
        guard recorder.joined else {
            unlink(partial)
            fail("nothing recorded: never joined the room (\(SafeText.display(recorder.problem ?? recorder.lastReason ?? "no answer")))"
                 + (access(output, F_OK) == 0 ? "; \(SafeText.display(output)) is unchanged" : ""))
        }
        guard wrote, rename(partial, output) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(partial)
            fail("cannot write \(SafeText.display(output)): \(reason)")
        }
        log("recorded \(recorder.progress) to \(SafeText.display(output))", to: STDERR_FILENO)
        if let problem = recorder.problem { fail(problem) }
    }
}

extension Record: RoomWording {
    static let roomHelp = "The room, e.g. ws://127.0.0.1:8080/rooms/demo."
}

/// Writes what a room sends as recording lines; runs on the client's loop.
final class Recorder: @unchecked Sendable {
    private let fd: Int32
    private let room: String
    private let url: String
    private let state = Mutex(Progress())
    private var started: UInt64?
    /// Waiting for the room's document before the header is written (the welcome says one follows).
    private var awaitingDocument = false

    struct Progress {
        var events = 0
        var seconds = 0.0
        var ended = false
        var problem: String?
        var joined = false
        var lastReason: String?
    }

    init(fd: Int32, room: String, url: String) {
        self.fd = fd
        self.room = room
        self.url = url
    }

    var ended: Bool { state.withLock { $0.ended } }
    /// Whether the room welcomed the recorder (the recording has its header or will).
    var joined: Bool { state.withLock { $0.joined } }
    /// Why the last connection attempt failed, while it never joined.
    var lastReason: String? { state.withLock { $0.lastReason } }
    var problem: String? { state.withLock { $0.problem } }
    var progress: String { state.withLock { "\($0.events) events, \(Double(Int($0.seconds * 10)) / 10) s" } }

    func handle(_ event: RoomClient.Event) {
        switch event {
        case .message(.welcome(let welcome)):
            guard started == nil else { return }  // a reconnect continues the same recording
            started = monotonicNanoseconds()
            state.withLock { $0.joined = true }
            pendingWelcome = welcome
            if welcome.doc != nil {
                awaitingDocument = true
            } else {
                writeHeader(document: nil)
                writeWelcome()
            }
        case .message(.document(let document)) where awaitingDocument:
            awaitingDocument = false
            writeHeader(document: document)
            writeWelcome()
        case .message(.document(let document)): write(.document(document))
        case .message(.state(let state)):
            if awaitingDocument { pendingWelcome?.state = state } else { write(.state(state)) }
        case .message(.driver(let driver, let name)): write(.driver(driver.flatMap(SessionID.init), name: name))
        case .message(.presence(let presence)): write(.presence(presence))
        case .status(.refused(let reason)):
            state.withLock { $0.problem = reason; $0.ended = true }
        case .status(.waiting(_, let reason)) where started != nil:
            log("disconnected (\(reason)); reconnecting", to: STDERR_FILENO)
        case .status(.waiting(_, let reason)):
            state.withLock { $0.lastReason = reason }
        default:
            break
        }
    }

    /// The room as the welcome found it (its state the newest seen), until the header is written.
    private var pendingWelcome: ServerEvent.Welcome?

    /// The room's place and driver when the recorder joined: the first events, so that a
    /// recording started mid-talk plays from there and names who drives.
    private func writeWelcome() {
        guard let welcome = pendingWelcome else { return }
        pendingWelcome = nil
        if let state = welcome.state { write(.state(state)) }
        if let driver = welcome.driver.flatMap(SessionID.init) { write(.driver(driver, name: welcome.driverName)) }
    }

    private func writeHeader(document: SharedDocument?) {
        writeLine(Recording.headerLine(Recording.Header(room: room, started: utcTimestamp(), url: url, document: document)))
    }

    private func write(_ message: Recording.Message) {
        guard let started, !awaitingDocument else { return }
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        // A recording is at most a week and a million events long (readers refuse more).
        guard seconds <= Recording.maxSeconds, state.withLock({ $0.events }) < Recording.maxEvents else {
            state.withLock { $0.ended = true }
            return
        }
        writeLine(Recording.eventLine(Recording.Event(seconds: seconds, message: message)))
        state.withLock {
            $0.events += 1
            $0.seconds = seconds
        }
    }

    private func writeLine(_ line: [UInt8]) {
        if let error = writeAll(fd, line + [10]) {
            state.withLock { $0.problem = "cannot write the recording: \(String(cString: strerror(error)))"; $0.ended = true }
        }
    }
}

/// A recording file, read and checked, or a clear error (exit 65: the data is bad).
func readRecording(_ path: String) -> Recording {
    let bytes: [UInt8]
    do {
        bytes = try readFile(path, atMost: 512 << 20)
    } catch {
        fail(error.description)
    }
    do {
        return try Recording.read(bytes, limits: ClientMessage.Limits())
    } catch {
        logError("\(SafeText.display(path)): \(SafeText.display(error.description))")
        exit(65)
    }
}

/// The times at which a recording's events play: scaled by `speed`, pauses cut to `idleLimit`.
func playTimes(_ recording: Recording, speed: Double, idleLimit: Double?) -> [Double] {
    var times = [Double]()
    var last = 0.0
    var played = 0.0
    for event in recording.events {
        var gap = event.seconds - last
        if let idleLimit { gap = min(gap, idleLimit) }
        played += gap / speed
        last = event.seconds
        times.append(played)
    }
    return times
}

/// Sleeps until `seconds` after `start` (monotonic nanoseconds).
func sleep(until seconds: Double, from start: UInt64) {
    let left = seconds - Double(monotonicNanoseconds() &- start) / 1e9
    if left > 0 { pause(seconds: left) }
}

/// How a recording plays (`play`, `replay`): `--speed`, `--idle-limit`.
struct PlaybackOptions: ParsableArguments {
    @Option(help: "Play this many times as fast.")
    var speed = 1.0

    @Option(help: "Cut every pause longer than this many seconds to it (as asciinema does).")
    var idleLimit: Double?

    func validate() throws {
        guard speed > 0, speed <= 1000 else { throw ValidationError("--speed must be more than 0 and at most 1000") }
        if let idleLimit, !(idleLimit > 0) { throw ValidationError("--idle-limit must be more than 0 seconds") }
    }

    /// When each of the recording's events plays, from its start.
    func times(_ recording: Recording) -> [Double] { playTimes(recording, speed: speed, idleLimit: idleLimit) }
}

/// `scrollsync play FILE`: a recording in the terminal, or its states as JSON lines.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a recording: the document and the presenter's moves at their times, in the terminal or as JSON lines.",
        discussion: "In the terminal: space pauses and resumes, ←/→ go to the previous/next change of section, +/- change the speed, j/k and the other keys of follow scroll (f follows again), q quits. It exits at the end of the recording; --hold stays on the last frame until q.")

    @Argument(help: "A recording (scrollsync record).")
    var file: String

    @OptionGroup var playback: PlaybackOptions

    @Flag(help: "Print each state as a JSON line at its time instead of showing the document.")
    var json = false

    @Option(help: ArgumentHelp("Write one self-contained HTML page that plays the recording in any browser (no server, no network), then exit.", valueName: "page.html"))
    var html: String?

    @Flag(help: "Stay on the last frame at the end (until q) instead of exiting.")
    var hold = false

    @Option(help: "Write the follower's view as an asciicast v2 file (asciinema) instead of playing, at --size.")
    var cast: String?

    @Option(help: "The terminal size of --cast, COLUMNSxROWS (20-400 x 5-200).")
    var size = "80x24"

    func validate() throws {
        if [json, html != nil, cast != nil].filter({ $0 }).count > 1 { throw ValidationError("--json, --html and --cast are different outputs: give one") }
        guard cast != nil else { return }
        let parts = size.split(separator: "x", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, case .success = ScreenSize.parse(columns: parts[0], rows: parts[1]) else {
            throw ValidationError("--size must be COLUMNSxROWS, e.g. 100x30, not \(SafeText.display(String(size.prefix(32))))")
        }
    }

    /// The recording in the terminal, rendered as `follow` renders a room (any width, by
    /// block id): space pauses, ←/→ go to the previous/next section change, +/- change the
    /// speed, q quits.
    private func playInTerminal(_ recording: Recording) throws {
        let player = Player(recording, speed: playback.speed, idleLimit: playback.idleLimit, hold: hold)
        let size = Terminal.size
        let model = ViewerModel.follower(room: recording.header.room, localDocument: nil, width: size.width, height: size.height)
        let app = TerminalApp(model: model, takeKey: player.take) { _ in }
        app.post(.connection(.connected))
        let thread = spawnThread { player.run(into: app) }
        app.run()
        _ = player.take(.character("q"))
        pthread_join(thread, nil)
    }

    /// The recording as an asciicast v2 file at `--size` (its pauses cut to `--idle-limit`).
    private func writeCast(_ recording: Recording, to path: String) throws {
        let parts = size.split(separator: "x").map(String.init)
        let screen = try ScreenSize.parse(columns: parts[0], rows: parts[1]).get()
        let times = playTimes(recording, speed: playback.speed, idleLimit: playback.idleLimit)
        let lines = Asciicast.lines(of: recording, times: times, size: screen, idleLimit: playback.idleLimit, timestamp: Int(wallClockMs() / 1000))
        try writeFileAtomically(path, Array(lines.joined().utf8))
    }

    func run() throws {
        let recording = readRecording(file)
        if let html { return try writePlayerPage(recording, times: playTimes(recording, speed: 1, idleLimit: playback.idleLimit), to: html) }
        if let cast { return try writeCast(recording, to: cast) }
        guard json else { return try playInTerminal(recording) }
        let times = playback.times(recording)
        let start = monotonicNanoseconds()
        for (event, time) in zip(recording.events, times) {
            guard case .state(let state) = event.message else { continue }
            sleep(until: time, from: start)
            writeLine(ServerMessage.state(state))
        }
    }
}
