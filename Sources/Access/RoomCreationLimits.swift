import Synchronization
import Transport

/// What one client address may do to the room table, so that one client cannot fill it for
/// everyone: create rooms at a bounded rate (a token bucket), and hold a bounded number of
/// rooms it created that no presenter has joined yet ("unclaimed": a follower asked for a
/// name nobody presents in). Over either: HTTP 429 with `Retry-After`. Safe from any thread.
package final class RoomCreationLimits: Sendable {
    private struct Entry {
        var tokens: Double
        var updated: UInt64
        var unclaimed = 0
    }

    /// Rooms an address may create per minute (and at once); 0 is no limit.
    package let perMinute: Int
    /// Unclaimed rooms an address may hold; 0 is no limit.
    package let unclaimedPerAddress: Int
    private let entries = Mutex<[String: Entry]>([:])

    package init(perMinute: Int, unclaimedPerAddress: Int) {
        self.perMinute = perMinute
        self.unclaimedPerAddress = unclaimedPerAddress
    }

    /// Why `address` may not create a room now, with the seconds to wait; nil when it may.
    package func refusal(address: String, now: UInt64) -> (reason: String, retryAfter: Int)? {
        entries.withLock { entries in
            guard var entry = entries[address] else { return nil }
            refill(&entry, now: now)
            entries[address] = entry
            if unclaimedPerAddress > 0 && entry.unclaimed >= unclaimedPerAddress {
                return ("\(address) holds \(entry.unclaimed) rooms that no presenter has joined (limit \(unclaimedPerAddress))", 30)
            }
            if perMinute > 0 && entry.tokens < 1 {
                return ("\(address) created more than \(perMinute) rooms in a minute", Int((1 - entry.tokens) * 60 / Double(perMinute)) + 1)
            }
            return nil
        }
    }

    /// Counts a room `address` creates (unclaimed unless its creator is a presenter), or says
    /// why it may not, in one step: requests that all passed `refusal` at once cannot all create.
    package func create(address: String, claimed: Bool, now: UInt64) -> (reason: String, retryAfter: Int)? {
        entries.withLock { entries in
            var entry = entries[address] ?? Entry(tokens: Double(perMinute), updated: now)
            refill(&entry, now: now)
            if !claimed && unclaimedPerAddress > 0 && entry.unclaimed >= unclaimedPerAddress {
                return ("\(address) holds \(entry.unclaimed) rooms that no presenter has joined (limit \(unclaimedPerAddress))", 30)
            }
            if perMinute > 0 && entry.tokens < 1 {
                return ("\(address) created more than \(perMinute) rooms in a minute", Int((1 - entry.tokens) * 60 / Double(perMinute)) + 1)
            }
            if perMinute > 0 { entry.tokens -= 1 }
            if !claimed { entry.unclaimed += 1 }
            entries[address] = entry
            return nil
        }
    }

    /// A room `address` created was claimed by a presenter, or removed while unclaimed.
    package func settled(address: String) {
        entries.withLock { entries in
            entries[address]?.unclaimed -= 1
        }
    }

    /// Forgets addresses with nothing to remember (no unclaimed room, a full bucket).
    package func sweep(now: UInt64) {
        entries.withLock { entries in
            entries = entries.filter { _, entry in
                var entry = entry
                refill(&entry, now: now)
                return entry.unclaimed > 0 || (perMinute > 0 && entry.tokens < Double(perMinute))
            }
        }
    }

    /// Addresses remembered (tests).
    package var addressesTracked: Int { entries.withLock { $0.count } }

    private func refill(_ entry: inout Entry, now: UInt64) {
        guard perMinute > 0 else { return }
        entry.tokens = min(Double(perMinute), entry.tokens + Double(elapsedNanoseconds(from: entry.updated, to: now)) / 60e9 * Double(perMinute))
        entry.updated = max(entry.updated, now)
    }
}
