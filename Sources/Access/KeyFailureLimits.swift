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

    package init(perMinute: Int) { self.perMinute = perMinute }

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
            windows[key] = window
            windowCount.store(windows.count, ordering: .relaxed)
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
            windows[key] = window
            windowCount.store(windows.count, ordering: .relaxed)
        }
    }

    /// Counts a wrong key from `address` for `room` that needed no check (none was given).
    package func failed(address: String, room: String, now: UInt64) {
        guard perMinute > 0 else { return }
        windows.withLock { windows in
            let key = address + " " + room
            var window = current(windows[key], now: now)
            window.failures += 1
            windows[key] = window
            windowCount.store(windows.count, ordering: .relaxed)
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

    /// Forgets windows that are over and have no check running.
    package func sweep(now: UInt64) {
        windows.withLock { windows in
            windows = windows.filter { $0.value.running > 0 || elapsedNanoseconds(from: $0.value.started, to: now) < Self.minute }
            windowCount.store(windows.count, ordering: .relaxed)
        }
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
        if !failed, let action = notFailed.withLock({ $0 }) { action() }
    }

    /// Runs `action` when the check settles as not failed (e.g. gives back a shared count).
    package func whenNotFailed(_ action: @escaping @Sendable () -> Void) {
        notFailed.withLock { $0 = action }
    }

    deinit { settle(failed: false, now: now) }
}
