import ArgumentParser
import Dispatch
import ScrollModel
import Synchronization
import SyncClient
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// `scrollsync replay FILE URL --key K`: drives a live room from a recording.
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Drive a live room from a recording: its document, then each move at its time (a rehearsed talk, a looping demo).")

    @Argument(help: "A recording (scrollsync record).")
    var file: String

    @OptionGroup var room: RoomArgument<Replay>

    @OptionGroup var presenter: PresenterOptions<Replay>

    @OptionGroup var playback: PlaybackOptions

    @Flag(help: "Start again from the beginning at the end, until Ctrl-C.")
    var loop = false

    @OptionGroup var connection: ConnectionOptions

    /// A follow key without a presenter key or token is a usage error (the server refuses it).
    func validate() throws { try connection.checkFollowKey(presenterKey: presenter.key) }

    func run() throws {
        let recording = readRecording(file)
        let roomURL = try room.joining(presenter.query(connection)).url
        let signals = blockTerminationSignals()
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.shutdown() }
        let joined = DispatchSemaphore(value: 0)
        let refusal = Mutex<String?>(nil)
        let client = try RoomClient(urls: [roomURL], loop: group.loops[0], options: connection.clientOptions) { event in
            switch event {
            case .message(.welcome): joined.signal()
            case .status(.refused(let reason)):
                refusal.withLock { $0 = reason }
                joined.signal()
            case .message(.error(let code, let message)):
                ReplayProgress.makeRoomForALine()  // the progress line comes back with the next move
                log("the room refused a move: \(code): \(message)", to: STDERR_FILENO)
            default: break
            }
        }
        client.start()
        defer { client.stopAndWait() }
        guard joined.wait(timeout: .now() + 10) == .success else { fail("could not join \(roomURL.redacted): no answer") }
        if let reason = refusal.withLock({ $0 }) { fail("refused: \(reason)") }
        let times = playback.times(recording)
        var progress = ReplayProgress(events: times.count, seconds: times.last ?? 0)
        defer { progress.clear() }
        repeat {
            if let document = recording.header.document { client.send(.document(name: document.name, format: document.format, text: document.text)) }
            let start = monotonicNanoseconds()
            for (index, (event, time)) in zip(recording.events, times).enumerated() {
                // The clock on the progress line moves while a pause in the talk lasts.
                while Double(monotonicNanoseconds() &- start) / 1e9 < time - 1, !signalPending(signals) {
                    pause(seconds: 1)
                    progress.show(played: index, at: Double(monotonicNanoseconds() &- start) / 1e9)
                }
                sleep(until: time, from: start)
                if signalPending(signals) { return }
                progress.show(played: index + 1, at: time)
                switch event.message {
                case .state(let state):
                    client.send(.scroll(ScrollUpdate(offset: state.offset, viewport: state.viewport, content: state.content, anchor: state.anchor)))
                case .document(let document):
                    client.send(.document(name: document.name, format: document.format, text: document.text))
                case .driver, .presence:
                    break
                }
            }
            progress.clear()
            log("replayed \(recording.events.count) events", to: STDERR_FILENO)
        } while loop && !signalPending(signals)
    }
}

extension Replay: RoomWording, PresenterWording {
    static let roomHelp = "The room to drive, e.g. ws://127.0.0.1:8080/rooms/demo."
    static let keyHelp = "The room's presenter key."
    static let nameHelp = "Your name, shown to the room."
}

/// `replay`'s progress line on a terminal (`▶ 0:42 / 3:10  17/60 events`), rewritten in place
/// on standard error; nothing when standard error is not a terminal (a log, a pipe).
struct ReplayProgress {
    private let events: Int
    private let seconds: Double
    private let onTerminal = isatty(STDERR_FILENO) == 1
    private var shown = false

    init(events: Int, seconds: Double) {
        self.events = events
        self.seconds = seconds
    }

    /// Says that `played` events have gone, `at` seconds into the recording.
    mutating func show(played: Int, at time: Double) {
        guard onTerminal else { return }
        let line = "\r\u{1B}[K▶ \(Player.clock(min(time, seconds))) / \(Player.clock(seconds))  \(played)/\(events) events"
        _ = writeAll(STDERR_FILENO, Array(line.utf8))
        shown = true
    }

    /// Clears the progress line, if standard error is a terminal, so that a line logged from
    /// another thread starts at the left edge.
    static func makeRoomForALine() {
        if isatty(STDERR_FILENO) == 1 { _ = writeAll(STDERR_FILENO, Array("\r\u{1B}[K".utf8)) }
    }

    /// Takes the line away (before a line of its own is logged, and at the end).
    mutating func clear() {
        guard shown else { return }
        _ = writeAll(STDERR_FILENO, Array("\r\u{1B}[K".utf8))
        shown = false
    }
}
