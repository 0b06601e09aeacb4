import RoomKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Counters for /metrics.
public final class EngineCounters: Sendable {
    public let outages = Atomic<Int>(0)
    public let messagesIn = Atomic<Int>(0)
    /// States this node published as the lease holder (no script), and changes it sent as scripts.
    public let ledStates = Atomic<Int>(0)
    public let scriptedChanges = Atomic<Int>(0)
    /// What was read from Redis and refused, by reason.
    let refused = Dictionary(uniqueKeysWithValues: SharedInput.Refusal.Reason.allCases.map { ($0, Counter()) })

    /// Inputs refused for `reason`.
    func refusals(_ reason: SharedInput.Refusal.Reason) -> Int { refused[reason]?.value ?? 0 }
}

func wallMilliseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
}
