/// Keeps `seq` from going back after a crash: a room uses a `seq` only once the store has
/// written a ceiling at or above it, and a restarted room continues above the ceiling.
/// Ceilings are asked for a block ahead, and a new block when half of one is left, so a
/// scroll waits for the disk only when the store lags by thousands of scrolls.
package struct SeqReservation: Equatable, Sendable {
    package static let block = 4096

    /// The highest `seq` the store has written as usable.
    package private(set) var written: Int
    /// The highest ceiling asked of the store.
    package private(set) var asked = 0

    /// A room whose store has written `written` (0: a new room, whose first scroll waits).
    package init(written: Int) {
        self.written = written
    }

    /// A room without a store: nothing to wait for.
    package static let unbounded = SeqReservation(written: .max)

    /// Whether a scroll after `lastSeq` must wait for the store.
    package func mustWait(after lastSeq: Int) -> Bool { lastSeq >= written }

    /// The ceiling to write with the room now that its `seq` is `lastSeq`: the last one
    /// asked, or a block ahead once half of it is used.
    package mutating func ceiling(for lastSeq: Int) -> Int {
        if lastSeq + Self.block / 2 > asked { asked = lastSeq + Self.block }
        return asked
    }

    /// The store wrote `ceiling`; returns whether a scroll after `lastSeq` may go now.
    package mutating func wrote(_ ceiling: Int, lastSeq: Int) -> Bool {
        written = max(written, ceiling)
        return !mustWait(after: lastSeq)
    }
}
