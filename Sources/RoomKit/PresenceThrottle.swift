/// When a room's presence (member counts) goes out: at most once per interval, the first
/// change at once and later ones within the interval together at its end, with the counts
/// as they are then. The interval grows with the room (one millisecond per member, as many
/// as there are when the send is due), so presence costs at most about 1,000 writes a second
/// per room however many join, and however fast.
package struct PresenceThrottle: Equatable, Sendable {
    package enum Decision: Equatable {
        case sendNow
        /// Schedule one send this many nanoseconds from now.
        case sendAfter(UInt64)
        /// A send is already scheduled; it will carry this change.
        case alreadyScheduled
    }

    /// The shortest interval, for small rooms.
    package let intervalMilliseconds: Int
    package private(set) var sentAt: UInt64 = 0
    package private(set) var scheduled = false

    package init(intervalMilliseconds: Int) {
        self.intervalMilliseconds = intervalMilliseconds
    }

    /// The counts changed at `now` in a room of `members`.
    package mutating func changed(now: UInt64, members: Int) -> Decision {
        guard !scheduled else { return .alreadyScheduled }
        let due = sentAt + UInt64(max(intervalMilliseconds, members)) * 1_000_000
        guard now < due else { return .sendNow }
        scheduled = true
        return .sendAfter(due - now)
    }

    /// The scheduled send is due at `now` in a room of `members` (as it is now): nil to send,
    /// or how much longer it waits (the room grew since the change, and its interval with it).
    package func waitLeft(now: UInt64, members: Int) -> UInt64? {
        let due = sentAt + UInt64(max(intervalMilliseconds, members)) * 1_000_000
        return now < due ? due - now : nil
    }

    /// Presence goes out at `now` (at once, or the scheduled send).
    package mutating func sending(at now: UInt64) {
        sentAt = now
        scheduled = false
    }
}
