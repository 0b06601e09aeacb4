import Transport

/// A token bucket of `burst` tokens, refilled at `rate` per second (both given by the
/// owner, which shares them with other buckets).
struct TokenBucket {
    private var tokens: Double
    private var updated: UInt64

    init(burst: Double, now: UInt64) {
        tokens = burst
        updated = now
    }

    /// Takes a token if there is one.
    mutating func take(now: UInt64, rate: Double, burst: Double) -> Bool {
        tokens = min(burst, tokens + Double(elapsedNanoseconds(from: updated, to: now)) / 1e9 * rate)
        updated = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Nanoseconds until a token will be there (as of the last `take`).
    func wait(rate: Double) -> UInt64 {
        tokens >= 1 ? 0 : UInt64(((1 - tokens) / rate * 1e9).rounded(.up))
    }
}
