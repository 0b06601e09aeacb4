/// When each key was renewed last, so that a renewal asked for often goes out only as often as
/// it is needed (`RedisRoomEngine`'s hash renewals). Loop-confined.
package struct RenewalTimes {
    private var last: [String: UInt64] = [:]

    package init() {}

    /// Whether `key` is due (never renewed, or `interval` nanoseconds since); if so, it counts
    /// as renewed `now`.
    package mutating func isDue(_ key: String, now: UInt64, every interval: UInt64) -> Bool {
        if let at = last[key], now &- at < interval { return false }
        last[key] = now
        return true
    }

    /// Forgets `key` (its room left this node): the next renewal goes out at once.
    package mutating func forget(_ key: String) { last[key] = nil }
}
