import Dispatch
import ScrollModel
import Synchronization
import TerminalUI
import Transport

/// Plays a recording into a viewer at its times: the room's messages as they came, paced by
/// a clock that `space` pauses, `+`/`-` speed up or slow down, and `←`/`→` move to the
/// previous or next change of section. The status line says where it is (`▶ 1:23 / 10:00 ×2`).
/// At the end it stops the viewer, unless it holds the last frame (`--hold`).
final class Player: Sendable {
    private let recording: Recording
    private let hold: Bool
    /// Who drives, for a recording that never says (a `record` of an older version): the
    /// session whose moves it holds, as "presenter".
    private let inferredDriver: ServerEvent?
    /// Each event's time on the timeline at 1× (pauses longer than the idle limit cut).
    private let times: [Double]
    /// The events where the presenter's top block enters another section.
    private let sectionChanges: [Int]
    private let position = Mutex(Position())
    private let wake = DispatchSemaphore(value: 0)
    static let speeds: [Double] = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64]

    struct Position {
        /// The next event to play, and the timeline's time at `since` (monotonic ns).
        var next = 0
        var at = 0.0
        var since = monotonicNanoseconds()
        var speed = 1.0
        var paused = false
        var quit = false
        /// Events to post again before going on (after a move: the document, driver and state there).
        var seek: Int?

        func now(_ clock: UInt64) -> Double {
            paused ? at : at + Double(clock &- since) / 1e9 * speed
        }
    }

    init(_ recording: Recording, speed: Double, idleLimit: Double?, hold: Bool) {
        self.recording = recording
        self.hold = hold
        let namesDriver = recording.events.contains { if case .driver = $0.message { true } else { false } }
        let firstMove = recording.events.lazy.compactMap { if case .state(let state) = $0.message { state } else { nil } }.first
        inferredDriver = namesDriver ? nil : firstMove.map { .driver($0.by, name: "presenter") }
        times = playTimes(recording, speed: 1, idleLimit: idleLimit)
        sectionChanges = Self.sectionChanges(recording)
        position.withLock { $0.speed = speed }
    }

    var total: Double { times.last ?? 0 }

    /// The player's keys; true for a key it took.
    func take(_ key: Key) -> Bool {
        let taken = position.withLock { position -> Bool in
            let now = monotonicNanoseconds()
            let here = position.now(now)
            switch key {
            case .character(" "):
                position.at = here
                position.since = now
                position.paused.toggle()
            case .character("+"), .character("-"):
                let index = Self.speeds.firstIndex { $0 >= position.speed } ?? Self.speeds.count - 1
                let next = key == .character("+") ? min(index + 1, Self.speeds.count - 1) : max(index - 1, 0)
                position.at = here
                position.since = now
                position.speed = Self.speeds[next]
            case .left, .right:
                // The section change last played, and the one before or after it.
                let played = position.next - 1
                let current = sectionChanges.last { $0 <= played }
                let target = key == .right ? sectionChanges.first { $0 > played }
                                           : sectionChanges.last { $0 < (current ?? 0) } ?? current
                guard let target else { return true }
                position.next = target
                position.at = times[target]
                position.since = now
                position.seek = target
            case .character("q"), .interrupt:
                position.quit = true
                return false  // the viewer quits too
            default:
                return false
            }
            return true
        }
        if taken { wake.signal() }
        return taken
    }

    /// Posts the recording's messages into `app` at their times until the user quits, or
    /// until the end unless it holds.
    func run(into app: TerminalApp) {
        if let document = recording.header.document { app.post(.server(.document(document))) }
        if let inferredDriver { app.post(.server(inferredDriver)) }
        var lastStatus = ""
        while true {
            let (due, seek, status, quit, ended) = position.withLock { position -> ([Int], Int?, String, Bool, Bool) in
                let now = position.now(monotonicNanoseconds())
                var due = [Int]()
                while position.next < times.count, times[position.next] <= now {
                    due.append(position.next)
                    position.next += 1
                }
                let seek = position.seek
                position.seek = nil
                let shown = min(now, total)
                let mark = position.paused ? "⏸" : position.next >= times.count ? "■" : "▶"
                let speed = position.speed == 1 ? "" : " ×\(position.speed == position.speed.rounded() ? String(Int(position.speed)) : String(position.speed))"
                let ended = !position.paused && position.next >= times.count && now >= total
                return (due, seek, "\(mark) \(Self.clock(shown)) / \(Self.clock(total))\(speed)", position.quit, ended)
            }
            if quit { return }
            if let seek { replayUpTo(seek, into: app) }
            for index in due { post(recording.events[index].message, into: app) }
            if status != lastStatus {
                app.post(.playback(status))
                lastStatus = status
            }
            if ended, !hold {
                app.stop()  // as asciinema does: the end of the recording ends `play`
                return
            }
            // Sleep until the next event (or a key), at most 250 ms so the clock moves.
            let wait = position.withLock { position -> Double in
                guard !position.paused, position.next < times.count else { return 0.25 }
                return min(0.25, max(0.001, (times[position.next] - position.now(monotonicNanoseconds())) / position.speed))
            }
            _ = wake.wait(timeout: .now() + wait)
        }
    }

    /// After a move: the document, driver and place as they were at event `index`, then it.
    private func replayUpTo(_ index: Int, into app: TerminalApp) {
        let before = recording.events[..<index]
        if let document = before.last(where: { if case .document = $0.message { true } else { false } }) {
            post(document.message, into: app)
        } else if let document = recording.header.document {
            app.post(.server(.document(document)))
        }
        if let driver = before.last(where: { if case .driver = $0.message { true } else { false } }) { post(driver.message, into: app) }
    }

    private func post(_ message: Recording.Message, into app: TerminalApp) {
        switch message {
        case .state(let state): app.post(.server(.state(state)))
        case .document(let document): app.post(.server(.document(document)))
        case .driver(let id, let name): app.post(.server(.driver(id?.description, name: name)))
        case .presence(let presence): app.post(.server(.presence(presence)))
        }
    }

    /// `m:ss` (or `h:mm:ss`).
    static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return whole >= 3600 ? "\(whole / 3600):\(two(whole / 60 % 60)):\(two(whole % 60))" : "\(whole / 60):\(two(whole % 60))"
    }

    /// The state events whose top block is in another section than the state before's (by the
    /// document in force then; the first state counts as a change).
    static func sectionChanges(_ recording: Recording) -> [Int] {
        var document = recording.header.document.map { Document(text: $0.text, format: $0.format, name: $0.name) }
        var lastSection: Int?? = .none
        var changes = [Int]()
        for (index, event) in recording.events.enumerated() {
            switch event.message {
            case .document(let shared): document = Document(text: shared.text, format: shared.format, name: shared.name)
            case .state(let state):
                let section = state.anchor.flatMap { anchor in document?.blocks.first { $0.id == anchor.id }?.section }
                if lastSection == .none || lastSection! != section { changes.append(index) }
                lastSection = .some(section)
            default: break
            }
        }
        return changes
    }
}
