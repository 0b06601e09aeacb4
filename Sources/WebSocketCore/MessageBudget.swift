import Synchronization

/// Bytes that all connections together may hold in unfinished messages (fragmented, split
/// over reads, or being inflated), so that many clients that each start a large message and
/// never finish it cannot take the process's memory: past the budget a connection closes
/// with 1013 (try again later) instead of growing. Safe from any thread.
public final class MessageBudget: Sendable {
    /// The most bytes held at once.
    public let limit: Int
    private let held = Atomic<Int>(0)
    /// Bytes given back since `takeReleased()` last asked.
    private let released = Atomic<Int>(0)

    public init(limit: Int) { self.limit = limit }

    /// Bytes held now.
    public var inUse: Int { held.load(ordering: .relaxed) }

    /// Bytes that may still be taken.
    public var available: Int { max(0, limit - inUse) }

    /// Takes `count` bytes if the budget has them.
    func reserve(_ count: Int) -> Bool {
        var current = held.load(ordering: .relaxed)
        while true {
            guard current + count <= limit else { return false }
            let (exchanged, original) = held.compareExchange(expected: current, desired: current + count, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    func release(_ count: Int) {
        guard count > 0 else { return }
        held.subtract(count, ordering: .relaxed)
        released.add(count, ordering: .relaxed)
    }

    /// Bytes released since the last call (the server gives memory back to the system
    /// after a large release).
    public func takeReleased() -> Int { released.exchange(0, ordering: .relaxed) }
}
