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
    /// What is counted, for the refusal ("shared documents").
    package let holding: String
    private let held = Atomic<Int>(0)

    package init(limit: Int, holding: String = "shared documents") {
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
        refusal(growth: growth, held: bytesHeld)
    }

    /// Counts `growth` more bytes, or says why they do not fit (and counts nothing).
    package func reserve(_ growth: Int) -> ProtocolError? {
        var current = held.load(ordering: .relaxed)
        while true {
            if let refusal = refusal(growth: growth, held: current) { return refusal }
            let (exchanged, original) = held.compareExchange(expected: current, desired: current + growth, ordering: .relaxed)
            if exchanged { return nil }
            current = original
        }
    }

    /// Uncounts `bytes` (a forgotten document, or a reservation the room did not take).
    package func release(_ bytes: Int) {
        held.subtract(bytes, ordering: .relaxed)
    }

    /// Counts `bytes` unchecked: documents restored at start, already within half the limit.
    package func restore(_ bytes: Int) {
        held.add(bytes, ordering: .relaxed)
    }

    private func refusal(growth: Int, held: Int) -> ProtocolError? {
        guard limit > 0, growth > 0, held + growth > limit else { return nil }
        return ProtocolError(.tooLarge, "the server holds as many bytes of \(holding) as it may (\(limit >> 20) MiB); try a smaller one or later")
    }
}
