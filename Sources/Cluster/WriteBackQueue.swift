/// The led states a lease holder's node has not yet written into their rooms' hashes, the newest
/// of each room, and when each is due (`RedisRoomEngine.publish(led:seq:by:room:keep:)`).
///
/// A write-back is a script that compares (`Scripts.writeBack`): some ten times a plain `HSET`
/// in Redis's CPU (docs/benchmarks-log.md, 2026-11-28 night). So a room is written once it rests
/// (`restNanoseconds` without a newer state), and while it keeps moving at most once per
/// `movingNanoseconds`: a room at 20 Hz costs Redis one script a second, not four. Pure: the
/// engine brings the loop's time and sends what is due.
package struct WriteBackQueue {
    package struct Pending {
        package var seq: Int
        package var by: String
        package var message: [UInt8]
        /// When the oldest state not yet written came, and when the newest did (loop time).
        package var firstAt: UInt64
        package var lastAt: UInt64
    }

    /// How long a room rests before its newest state is written (250 ms): where a room stops is
    /// in its hash soon after, for a node that fetches it later.
    package static let restNanoseconds: UInt64 = 250_000_000
    /// How long a moving room's newest state may wait (1 s): how far its hash lags at most
    /// while it moves (if every node that holds the room died at once, the moves lost).
    package static let movingNanoseconds: UInt64 = 1_000_000_000
    /// How often the engine looks for due states (125 ms): a resting room is written 250 to
    /// 375 ms after its last state.
    package static let checkNanoseconds: UInt64 = 125_000_000

    private(set) var pending: [String: Pending] = [:]
    /// Whether the engine's next look for due states is scheduled (one timer, not one per state).
    package var checkScheduled = false

    package init() {}

    package var isEmpty: Bool { pending.isEmpty }

    /// A led state of `room` at `now`; an older one than the room's pending state is ignored.
    package mutating func record(room: String, seq: Int, by: String, message: [UInt8], now: UInt64) {
        if let old = pending[room] {
            guard old.seq < seq else { return }
            pending[room] = Pending(seq: seq, by: by, message: message, firstAt: old.firstAt, lastAt: now)
        } else {
            pending[room] = Pending(seq: seq, by: by, message: message, firstAt: now, lastAt: now)
        }
    }

    /// Takes the states due at `now`: rooms that rested long enough, or waited long enough.
    package mutating func takeDue(now: UInt64) -> [(room: String, state: Pending)] {
        var due: [(room: String, state: Pending)] = []
        for (room, state) in pending
        where now &- state.lastAt >= Self.restNanoseconds || now &- state.firstAt >= Self.movingNanoseconds {
            due.append((room, state))
        }
        for (room, _) in due { pending[room] = nil }
        return due
    }

    /// Takes `room`'s pending state at once (before a control change), if one waits.
    package mutating func take(room: String) -> Pending? {
        pending.removeValue(forKey: room)
    }

    /// Drops every pending state (Redis is unavailable: what waits is merged later).
    package mutating func removeAll() {
        pending.removeAll()
    }
}
