package import RoomKit
import ScrollModel
import Transport

/// A room's timeline as the server records it (`rooms.record`, or a presenter's `record=1`):
/// the lines of Protocol/RECORDING.md — the header, then `[seconds, message]` for each state,
/// document and driver the room sent, the message exactly as members got it. Bounded per room
/// (`limit`) and, through a `ByteBudget`, for all rooms together: past either it stops (a
/// talk's beginning is kept rather than its end) and says so once.
struct RoomRecording {
    /// Every line so far, each ending in a newline.
    private(set) var bytes: [UInt8]
    /// How many of `bytes` the store has been given.
    private var saved = 0
    /// Seconds recorded before `resumedAt` (a recording restored after a restart goes on
    /// from its last event: the time the server was down is not in it).
    private let base: Double
    private let resumedAt: UInt64
    let limit: Int
    /// Its claim on the budget of all recordings (the address that pays for it).
    let ticket: RecordingBudget.Ticket
    /// It stopped at a bound (why); nothing more is added.
    private(set) var stopped: String?
    private var events = 0
    /// The last event's time: a room's messages come from every loop, whose clocks are read
    /// at different moments, and a recording's times never go back (RECORDING.md).
    private var lastSeconds: Double
    /// The last `driver` message added (a repeat of it is left out).
    private var lastDriver: [UInt8]?

    /// Starts a recording with `header`, or says why even that does not fit.
    init(header: Recording.Header, now: UInt64, limit: Int, budget: RecordingBudget, ticket: RecordingBudget.Ticket) throws(RecordingBudget.Refusal) {
        let line = Recording.headerLine(header) + [10]
        guard line.count <= limit else { throw .total(limit) }
        if let refusal = budget.reserve(line.count, for: ticket) { throw refusal }
        self.ticket = ticket
        bytes = line
        base = 0
        lastSeconds = 0
        resumedAt = now
        self.limit = limit
    }

    /// A recording read back from the store (already checked by `Recording.read`, within
    /// `limit`); the caller has counted its bytes against the budget.
    init(restoring bytes: [UInt8], lastSeconds: Double, now: UInt64, limit: Int, ticket: RecordingBudget.Ticket) {
        self.ticket = ticket
        self.bytes = bytes
        saved = bytes.count
        base = lastSeconds
        self.lastSeconds = lastSeconds
        resumedAt = now
        self.limit = limit
        events = bytes.reduce(0) { $1 == 10 ? $0 + 1 : $0 } - 1
    }

    /// Adds `message` (a server message's JSON) at `now`; false when this is where it stops.
    mutating func append(_ message: [UInt8], now: UInt64, budget: RecordingBudget) -> Bool {
        guard stopped == nil else { return true }
        let seconds = max(lastSeconds, ((base + Double(elapsedNanoseconds(from: resumedAt, to: now)) / 1e9) * 1000).rounded() / 1000)
        let prefix = Array("[\(seconds),".utf8)
        let size = prefix.count + message.count + 2
        // A reader takes at most a week and a million events (RECORDING.md).
        guard seconds <= Recording.maxSeconds, events < Recording.maxEvents, bytes.count + size <= limit else {
            stopped = "the recording reached its limit (limits.recordingBytes, a week or a million events)"
            return false
        }
        if let refusal = budget.reserve(size, for: ticket) {
            stopped = refusal.message
            return false
        }
        bytes += prefix
        bytes += message
        bytes += [UInt8(ascii: "]"), 10]
        events += 1
        lastSeconds = seconds
        return true
    }

    /// Adds a `driver` message unless it repeats the last one added: a presenter's join that
    /// starts the recording names the driver as its first events, then announces it to the
    /// room; the same driver twice says nothing new.
    mutating func appendDriver(_ message: [UInt8], now: UInt64, budget: RecordingBudget) -> Bool {
        guard message != lastDriver else { return true }
        lastDriver = message
        return append(message, now: now, budget: budget)
    }

    /// What the store has not been given yet (it appends it to the room's file).
    mutating func takeUnsaved() -> ArraySlice<UInt8>? {
        guard saved < bytes.count else { return nil }
        defer { saved = bytes.count }
        return bytes[saved...]
    }
}
