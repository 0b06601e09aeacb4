import Access
import RoomKit
import Synchronization

/// Counters for /metrics.
public final class EngineCounters: Sendable {
    public let outages = Atomic<Int>(0)
    public let messagesIn = Atomic<Int>(0)
    /// States this node published as the lease holder (no script), and changes it sent as scripts.
    public let ledStates = Atomic<Int>(0)
    public let scriptedChanges = Atomic<Int>(0)

    package init() {}
    /// What was read from Redis and refused, by reason.
    package let refused = Dictionary(uniqueKeysWithValues: SharedInput.Refusal.Reason.allCases.map { ($0, Counter()) })

    /// Inputs refused for `reason`.
    package func refusals(_ reason: SharedInput.Refusal.Reason) -> Int { refused[reason]?.value ?? 0 }
}
