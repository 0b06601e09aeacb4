import Synchronization
import Transport

/// Presenter key checks per client address and room: at most `perMinute` wrong keys in a
/// minute, counting the checks still running as if they failed, then that address is refused
/// presenting in that room (429) until the minute is over. Key guessing gets a few tries a
/// minute instead of thousands a second, also when the guesses are sent at once. Safe from
/// any thread.
package final class KeyFailureLimits: Sendable {
    private struct Window {
        var started: UInt64
        var failures: Int
        /// Checks begun and not yet settled.
        var running = 0
    }

    /// 0: no limit.
    package let perMinute: Int
    private let windows = Mutex<[String: Window]>([:])
    /// Windows held, so that the common case (nobody failed lately) costs one atomic load.
    private let windowCount = Atomic<Int>(0)
    package static let minute: UInt64 = 60_000_000_000
    /// Windows held at most: 65,536 (a few MiB) covers every address that may be guessing in a
    /// minute on a busy server. Past it, windows that are over go first, then the older half of
    /// those with no check running: an attacker who floods the table from many addresses to
    /// forget its own window pays some 32,000 requests for each new handful of guesses.
    package let capacity: Int

    package init(perMinute: Int, capacity: Int = 65_536) {
        self.perMinute = perMinute
        self.capacity = max(2, capacity)
    }

    /// A check of a key from `address` for `room` begins: the ticket that settles it, or the
    /// seconds to wait when the failures and the checks running already reach the limit.
    package func begin(address: String, room: String, now: UInt64) -> Result<KeyCheckTicket, RetryAfter> {
        guard perMinute > 0 else { return .success(KeyCheckTicket(limits: nil, key: "", now: now)) }
        let key = address + " " + room
        return windows.withLock { windows in
            var window = current(windows[key], now: now)
            guard window.failures + window.running < perMinute else {
                return .failure(RetryAfter(seconds: window.failures >= perMinute ? secondsLeft(window, now: now) : 1))
            }
            window.running += 1
            store(window, at: key, in: &windows, now: now)
            return .success(KeyCheckTicket(limits: self, key: key, now: now))
        }
    }

    /// Seconds to wait before trying again.
    package struct RetryAfter: Error {
        package let seconds: Int
    }

    /// A ticket's check ended: a wrong key counts.
    fileprivate func settle(key: String, failed: Bool, now: UInt64) {
        windows.withLock { windows in
            var window = current(windows[key], now: now)
            window.running = max(0, window.running - 1)
            if failed { window.failures += 1 }
            store(window, at: key, in: &windows, now: now)
        }
    }

    /// Counts a wrong key from `address` for `room` that needed no check (none was given).
    package func failed(address: String, room: String, now: UInt64) {
        guard perMinute > 0 else { return }
        windows.withLock { windows in
            let key = address + " " + room
            var window = current(windows[key], now: now)
            window.failures += 1
            store(window, at: key, in: &windows, now: now)
        }
    }

    /// Seconds until `address` may try a key for `room` again, or nil when it may now.
    package func retryAfter(address: String, room: String, now: UInt64) -> Int? {
        guard perMinute > 0, windowCount.load(ordering: .relaxed) > 0 else { return nil }
        return windows.withLock { windows in
            guard let window = windows[address + " " + room], window.failures >= perMinute,
                  elapsedNanoseconds(from: window.started, to: now) < Self.minute else { return nil }
            return secondsLeft(window, now: now)
        }
    }

    /// Windows held now (tests).
    package var windowsHeld: Int { windowCount.load(ordering: .relaxed) }

    /// Forgets windows that are over and have no check running.
    package func sweep(now: UInt64) {
        windows.withLock { windows in
            windows = windows.filter { $0.value.running > 0 || elapsedNanoseconds(from: $0.value.started, to: now) < Self.minute }
            windowCount.store(windows.count, ordering: .relaxed)
        }
    }

    /// Keeps `window`, making room first when a new key would pass `capacity`.
    private func store(_ window: Window, at key: String, in windows: inout [String: Window], now: UInt64) {
        if windows[key] == nil, windows.count >= capacity {
            windows = windows.filter { $0.value.running > 0 || elapsedNanoseconds(from: $0.value.started, to: now) < Self.minute }
            if windows.count >= capacity {
                let idle = windows.filter { $0.value.running == 0 }.sorted { $0.value.started < $1.value.started }
                for (old, _) in idle.prefix(max(1, windows.count / 2)) { windows[old] = nil }
            }
        }
        windows[key] = window
        windowCount.store(windows.count, ordering: .relaxed)
    }

    /// The window as of `now`: a new one when the last is over (checks running carry over).
    private func current(_ window: Window?, now: UInt64) -> Window {
        guard let window else { return Window(started: now, failures: 0) }
        guard elapsedNanoseconds(from: window.started, to: now) >= Self.minute else { return window }
        return Window(started: now, failures: 0, running: window.running)
    }

    private func secondsLeft(_ window: Window, now: UInt64) -> Int {
        Int((Self.minute - min(Self.minute, elapsedNanoseconds(from: window.started, to: now))) / 1_000_000_000) + 1
    }
}

/// One key check counted against its address's limit until it is settled: as a failure
/// (a wrong key) or not (a right key, or a check whose answer nobody saw). A ticket dropped
/// unsettled settles as not failed, so no path can leak a running check.
package final class KeyCheckTicket: @unchecked Sendable {
    private let limits: KeyFailureLimits?
    private let key: String
    private let now: UInt64
    private let settled = Atomic<Bool>(false)
    private let notFailed = Mutex<(@Sendable () -> Void)?>(nil)

    fileprivate init(limits: KeyFailureLimits?, key: String, now: UInt64) {
        self.limits = limits
        self.key = key
        self.now = now
    }

    /// Ends the check (the first call counts; later ones do nothing).
    package func settle(failed: Bool, now: UInt64) {
        guard !settled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        limits?.settle(key: key, failed: failed, now: now)
        // Taken out, not copied: a closure read out of a `Mutex` as it is comes back wrapped
        // in thunks that are written back into it (swiftlang/swift#91348, issue 49).
        if !failed, let action = notFailed.withLock({ $0.take() }) { action() }
    }

    /// Runs `action` when the check settles as not failed (e.g. gives back a shared count).
    package func whenNotFailed(_ action: @escaping @Sendable () -> Void) {
        notFailed.withLock { $0 = action }
    }

    deinit { settle(failed: false, now: now) }
}
