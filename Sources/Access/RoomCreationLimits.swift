import Synchronization
import Transport

/// What one client address may do to the room table, so that one client cannot fill it for
/// everyone: create rooms at a bounded rate (a token bucket), and hold a bounded number of
/// rooms it created that no presenter has joined yet ("unclaimed": a follower asked for a
/// name nobody presents in). Over either: HTTP 429 with `Retry-After`. Safe from any thread.
package final class RoomCreationLimits: Sendable {
    /// One address's bucket of creations and its unclaimed rooms.
    package struct Bucket: AddressLimit {
        package struct Entry: Sendable {
            var tokens: Double
            var updated: UInt64
            var unclaimed = 0
        }

        /// Rooms per minute (and at once); 0 is no limit.
        let perMinute: Int

        package func fresh(now: UInt64) -> Entry { Entry(tokens: Double(perMinute), updated: now) }

        package func advance(_ entry: inout Entry, to now: UInt64) {
            guard perMinute > 0 else { return }
            entry.tokens = min(Double(perMinute), entry.tokens + Double(elapsedNanoseconds(from: entry.updated, to: now)) / 60e9 * Double(perMinute))
            entry.updated = max(entry.updated, now)
        }

        /// No unclaimed room, a full bucket.
        package func isIdle(_ entry: Entry, now: UInt64) -> Bool {
            var entry = entry
            advance(&entry, to: now)
            return entry.unclaimed <= 0 && (perMinute == 0 || entry.tokens >= Double(perMinute))
        }

        package func age(_ entry: Entry) -> UInt64? { entry.unclaimed <= 0 ? entry.updated : nil }
    }

    /// Rooms an address may create per minute (and at once); 0 is no limit.
    package var perMinute: Int { entries.limit.perMinute }
    /// Unclaimed rooms an address may hold; 0 is no limit.
    package let unclaimedPerAddress: Int
    private let entries: AddressTable<Bucket>

    /// `capacity`: addresses remembered at most (those holding unclaimed rooms are never
    /// forgotten; the room table bounds them).
    package init(perMinute: Int, unclaimedPerAddress: Int, capacity: Int = 65_536) {
        entries = AddressTable(Bucket(perMinute: perMinute), capacity: capacity)
        self.unclaimedPerAddress = unclaimedPerAddress
    }

    /// Why `address` may not create a room now, with the seconds to wait; nil when it may.
    package func refusal(address: String, now: UInt64) -> (reason: String, retryAfter: Int)? {
        entries.ifPresent(address, now: now) { refusal($0, address: address, claimed: false) } ?? nil
    }

    /// Counts a room `address` creates (unclaimed unless its creator is a presenter), or says
    /// why it may not, in one step: requests that all passed `refusal` at once cannot all create.
    package func create(address: String, claimed: Bool, now: UInt64) -> (reason: String, retryAfter: Int)? {
        entries.update(address, now: now) { entry in
            if let refusal = refusal(entry, address: address, claimed: claimed) { return refusal }
            if perMinute > 0 { entry.tokens -= 1 }
            if !claimed { entry.unclaimed += 1 }
            return nil
        }
    }

    /// A room `address` created was claimed by a presenter, or removed while unclaimed.
    package func settled(address: String) {
        entries.ifPresent(address) { $0.unclaimed -= 1 }
    }

    /// Forgets addresses with nothing to remember (no unclaimed room, a full bucket).
    package func sweep(now: UInt64) { entries.sweep(now: now) }

    /// Addresses remembered (tests).
    package var addressesTracked: Int { entries.count }

    private func refusal(_ entry: Bucket.Entry, address: String, claimed: Bool) -> (reason: String, retryAfter: Int)? {
        if !claimed && unclaimedPerAddress > 0 && entry.unclaimed >= unclaimedPerAddress {
            return ("\(address) holds \(entry.unclaimed) rooms that no presenter has joined (limit \(unclaimedPerAddress))", 30)
        }
        if perMinute > 0 && entry.tokens < 1 {
            return ("\(address) created more than \(perMinute) rooms in a minute", Int((1 - entry.tokens) * 60 / Double(perMinute)) + 1)
        }
        return nil
    }
}
