import ScrollModel
import Synchronization

/// Bytes all rooms of this node hold of one kind, held to a limit: shared documents
/// (`limits.documentsTotalBytes`: a room's new document is counted by how much it grows the
/// room's, its size less the one it replaces, before the room takes it) or recordings
/// (`limits.recordingsTotalBytes`). Uncounted when the room lets them go. Reservations race
/// safely: concurrent ones never exceed the limit.
package final class ByteBudget: Sendable {
    /// Bytes all rooms may hold together; 0 is no limit.
    package let limit: Int
    /// What is counted, for the refusal ("shared documents"): a static string, so that an
    /// `Allowance` (read into every room step's `Context`) holds no reference to retain and
    /// release (docs/benchmarks-log.md, "the join at join-45").
    package let holding: StaticString
    private let held = Atomic<Int>(0)

    package init(limit: Int, holding: StaticString = "shared documents") {
        self.limit = limit
        self.holding = holding
    }

    /// Bytes held now.
    package var bytesHeld: Int { held.load(ordering: .relaxed) }

    /// How much taking `text` grows a room whose document is `old`.
    package static func growth(replacing old: SharedDocument?, with text: String) -> Int {
        text.utf8.count - (old?.text.utf8.count ?? 0)
    }

    /// Why `growth` more bytes would not fit now, or nil (a shrinking document always fits).
    package func refusal(forGrowth growth: Int) -> ProtocolError? {
        allowance.refusal(forGrowth: growth)
    }

    /// The budget as it is now, as a value: what a room's step decides by (`RoomMachine.Context`).
    package var allowance: Allowance { Allowance(limit: limit, held: bytesHeld, holding: holding) }

    /// A budget's limit and the bytes held at one moment: decides without changing anything.
    /// A room's step decides by it and the hub counts what the step took (`count`), under the
    /// room's lock: two rooms stepping at once on two loops may each take what fits by the
    /// same moment's count, passing the limit by at most one document each.
    package struct Allowance: Sendable {
        package var limit: Int
        package var held: Int
        package var holding: StaticString

        package init(limit: Int, held: Int = 0, holding: StaticString = "shared documents") {
            self.limit = limit
            self.held = held
            self.holding = holding
        }

        /// Why `growth` more bytes would not fit, or nil (a shrinking document always fits; 0 is no limit).
        package func refusal(forGrowth growth: Int) -> ProtocolError? {
            guard limit > 0, growth > 0, held + growth > limit else { return nil }
            return ProtocolError(.tooLarge, "the server holds as many bytes of \(holding) as it may (\(limit >> 20) MiB); try a smaller one or later")
        }
    }

    /// Counts `growth` more bytes, or says why they do not fit (and counts nothing).
    package func reserve(_ growth: Int) -> ProtocolError? {
        var current = held.load(ordering: .relaxed)
        while true {
            if let refusal = Allowance(limit: limit, held: current, holding: holding).refusal(forGrowth: growth) { return refusal }
            let (exchanged, original) = held.compareExchange(expected: current, desired: current + growth, ordering: .relaxed)
            if exchanged { return nil }
            current = original
        }
    }

    /// Uncounts `bytes` (a forgotten document, or a reservation the room did not take).
    package func release(_ bytes: Int) {
        held.subtract(bytes, ordering: .relaxed)
    }

    /// Counts `bytes` unchecked (negative: uncounts): documents restored at start, already
    /// within half the limit, or what a room's step took by its `Allowance`.
    package func count(_ bytes: Int) {
        held.add(bytes, ordering: .relaxed)
    }
}
