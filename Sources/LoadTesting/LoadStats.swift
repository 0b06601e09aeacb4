import Histogram
import Transport

/// Measurements of one event loop during a load phase. Owned by that loop; copied out
/// with `snapshot()` on the loop and merged on the coordinating thread.
public struct LoadStats: Sendable {
    /// Staleness, in µs: for every (update, follower) pair, the time from the update's send
    /// to the follower first holding it or a newer one. What a follower feels.
    public var staleness = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
    /// (update, follower) pairs covered: the follower held that update or a newer one.
    public var coveredPairs = 0
    /// States received after sending stopped (the drain).
    public var drainDeliveries = 0
    /// Age of each state when a follower received it (now − `t`), in µs.
    public var latency = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
    /// The same, for slow readers only: how stale the states they saw were.
    public var slowStaleness = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
    /// Slow readers, after each pause: the time from resuming to holding the newest update
    /// sent before it (µs), and how many states they read on the way (the backlog the
    /// kernel's buffers held for them, which the server cannot conflate).
    public var slowCatchUp = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
    public var slowBacklog = Histogram<UInt64>(highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: .three)
    /// Connect-to-open time, in µs.
    public var handshake = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
    public var updatesSent = 0
    public var deliveries = 0
    public var slowDeliveries = 0
    public var outOfOrder = 0
    /// States a follower never saw (gaps in `seq`), e.g. conflated by the server.
    public var skipped = 0
    public var slowSkipped = 0
    public var serverErrors = 0
    public var connectionsOpened = 0
    public var failures: [String: Int] = [:]

    public init() {}

    /// Why connections failed, most frequent first: `"6× handshake refused: …; 1× …"`.
    public var failureSummary: String {
        failures.sorted { $0.value > $1.value }.map { "\($0.value)× \($0.key)" }.joined(separator: "; ")
    }

    public mutating func merge(_ other: LoadStats) {
        staleness.add(other.staleness)
        coveredPairs += other.coveredPairs
        drainDeliveries += other.drainDeliveries
        latency.add(other.latency)
        slowStaleness.add(other.slowStaleness)
        slowCatchUp.add(other.slowCatchUp)
        slowBacklog.add(other.slowBacklog)
        handshake.add(other.handshake)
        updatesSent += other.updatesSent
        deliveries += other.deliveries
        slowDeliveries += other.slowDeliveries
        outOfOrder += other.outOfOrder
        skipped &+= other.skipped  // wrapping: a hostile server's seq jumps must not trap
        slowSkipped &+= other.slowSkipped
        serverErrors += other.serverErrors
        connectionsOpened += other.connectionsOpened
        for (reason, count) in other.failures { failures[reason, default: 0] += count }
    }

    /// Starts a new phase; connection counts carry over.
    public mutating func resetMeasurements() {
        let opened = connectionsOpened
        let failures = failures
        let handshake = handshake
        self = LoadStats()
        connectionsOpened = opened
        self.failures = failures
        self.handshake = handshake
    }
}

/// Finds `"key":INTEGER` in a JSON text without parsing all of it (the hot path of a
/// load test receives a million states a second).
enum FastScan {
    /// The integer right after the first `key` (for keys near the start, like `seq`).
    static func integer(after key: StaticString, in bytes: UnsafeRawBufferPointer) -> Int64? {
        let keyLength = key.utf8CodeUnitCount
        guard keyLength > 0, bytes.count > keyLength else { return nil }
        for start in 0...(bytes.count - keyLength) where matches(key, at: start, in: bytes) {
            return integer(at: start + keyLength, in: bytes)
        }
        return nil
    }

    /// The integer right after the last `key` (for keys near the end, like `t`).
    static func lastInteger(after key: StaticString, in bytes: UnsafeRawBufferPointer) -> Int64? {
        let keyLength = key.utf8CodeUnitCount
        guard keyLength > 0, bytes.count > keyLength else { return nil }
        for start in stride(from: bytes.count - keyLength, through: 0, by: -1) where matches(key, at: start, in: bytes) {
            return integer(at: start + keyLength, in: bytes)
        }
        return nil
    }

    private static func matches(_ key: StaticString, at start: Int, in bytes: UnsafeRawBufferPointer) -> Bool {
        let key = UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
        guard bytes[start] == key[0] else { return false }
        for i in 1..<key.count where bytes[start + i] != key[i] { return false }
        return true
    }

    /// The (optionally negative) decimal integer at `index`; nil without a digit or past 15
    /// digits (every number the protocol sends is below 10^15 in size, so no arithmetic
    /// on what a server sends can overflow).
    private static func integer(at index: Int, in bytes: UnsafeRawBufferPointer) -> Int64? {
        var j = index
        var negative = false
        if j < bytes.count && bytes[j] == UInt8(ascii: "-") { negative = true; j += 1 }
        var value: Int64 = 0
        var digits = 0
        while j < bytes.count, bytes[j] >= 0x30, bytes[j] <= 0x39 {
            value = value &* 10 &+ Int64(bytes[j] - 0x30)
            j += 1
            digits += 1
        }
        return (1...15).contains(digits) ? (negative ? -value : value) : nil
    }

    static func hasPrefix(_ prefix: StaticString, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let length = prefix.utf8CodeUnitCount
        return bytes.count >= length && memcmp(bytes.baseAddress!, prefix.utf8Start, length) == 0
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Monotonic microseconds: the `t` the load tool's presenters send.
func monotonicMicroseconds() -> Int64 { Int64(monotonicNanoseconds() / 1000) }
