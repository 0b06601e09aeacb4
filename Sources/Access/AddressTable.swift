import Synchronization

/// What one kind of per-address limit keeps for an address and how it ages: a window of
/// failures, a bucket of room creations, a count of open connections. The table
/// (`AddressTable`) holds the entries; the limit says what they mean.
package protocol AddressLimit: Sendable {
    associatedtype Entry: Sendable
    /// A new entry at `now`, nothing counted yet.
    func fresh(now: UInt64) -> Entry
    /// `entry` as of `now` (a window that is over starts again, a bucket refills).
    func advance(_ entry: inout Entry, to now: UInt64)
    /// Whether `entry` holds nothing worth remembering at `now` (the sweep forgets it).
    func isIdle(_ entry: Entry, now: UInt64) -> Bool
    /// Whether `entry` holds nothing at all, whenever it is asked (it goes at once).
    func isEmpty(_ entry: Entry) -> Bool
    /// When `entry` began, for giving up the oldest first when the table is full; nil while
    /// something is in progress there (a check running, a room unclaimed): never given up.
    func age(_ entry: Entry) -> UInt64?
}

extension AddressLimit {
    package func isEmpty(_ entry: Entry) -> Bool { false }
}

/// One entry per client address (or address and room), for the limits that count what an
/// address does. Addresses arrive grouped (`AddressGrouping`: an IPv6 client by its network,
/// /64 by default). At most `capacity` entries are kept that may be given up: past it, idle
/// entries go first, then the older half of those with nothing in progress, so an attacker
/// who floods the table from many addresses pays some `capacity / 2` requests for each entry
/// it makes the table forget. Safe from any thread.
package final class AddressTable<Limit: AddressLimit>: Sendable {
    package let limit: Limit
    package let capacity: Int
    private let entries = Mutex<[String: Limit.Entry]>([:])
    /// Entries held, so that the common case (an empty table) costs one atomic load.
    private let held = Atomic<Int>(0)

    /// `capacity` at least 2; `Int.max` for a table bounded by something else.
    package init(_ limit: Limit, capacity: Int) {
        self.limit = limit
        self.capacity = max(2, capacity)
    }

    /// Entries held now.
    package var count: Int { held.load(ordering: .relaxed) }

    /// `body` on `key`'s entry as of `now` (a new one when there is none), which is kept
    /// (one hash lookup when the table is not full).
    package func update<Result: Sendable>(_ key: String, now: UInt64, _ body: (inout Limit.Entry) -> Result) -> Result {
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { makeRoom(in: &entries, now: now) }
            let result = Self.advanced(&entries[key, default: limit.fresh(now: now)], to: now, limit, body)
            held.store(entries.count, ordering: .relaxed)
            return result
        }
    }

    /// `body` on `key`'s entry, as of `now` when it is given, if there is one (nothing is
    /// added); an entry it leaves empty goes.
    package func ifPresent<Result: Sendable>(_ key: String, now: UInt64? = nil, _ body: (inout Limit.Entry) -> Result) -> Result? {
        entries.withLock { entries in
            guard var entry = entries[key] else { return nil }
            if let now { limit.advance(&entry, to: now) }
            let result = body(&entry)
            entries[key] = limit.isEmpty(entry) ? nil : entry
            held.store(entries.count, ordering: .relaxed)
            return result
        }
    }

    /// Forgets the entries that are idle at `now`.
    package func sweep(now: UInt64) {
        entries.withLock { entries in
            entries = entries.filter { !limit.isIdle($0.value, now: now) }
            held.store(entries.count, ordering: .relaxed)
        }
    }

    private static func advanced<Result: Sendable>(_ entry: inout Limit.Entry, to now: UInt64, _ limit: Limit,
                                         _ body: (inout Limit.Entry) -> Result) -> Result {
        limit.advance(&entry, to: now)
        return body(&entry)
    }

    /// Makes room for one more: idle entries go, then the older half of those that may.
    private func makeRoom(in entries: inout [String: Limit.Entry], now: UInt64) {
        entries = entries.filter { !limit.isIdle($0.value, now: now) }
        guard entries.count >= capacity else { return }
        let oldest = entries.compactMap { key, entry in limit.age(entry).map { (key, $0) } }.sorted { $0.1 < $1.1 }
        for (key, _) in oldest.prefix(max(1, entries.count / 2)) { entries[key] = nil }
    }
}
