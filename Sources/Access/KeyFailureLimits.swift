import Synchronization
import Transport

/// Presenter key checks per client address and room: at most `perMinute` wrong keys in a
/// minute, counting the checks still running as if they failed, then that address is refused
/// presenting in that room (429) until the minute is over. Key guessing gets a few tries a
/// minute instead of thousands a second, also when the guesses are sent at once. Safe from
/// any thread.
package final class KeyFailureLimits: Sendable {
    /// A minute of failures for one address and room.
    package struct Window: AddressLimit {
        package struct Entry: Sendable {
            var started: UInt64
            var failures = 0
            /// Checks begun and not yet settled.
            var running = 0
        }

        package func fresh(now: UInt64) -> Entry { Entry(started: now) }

        /// A new window when the last is over (checks running carry over).
        package func advance(_ entry: inout Entry, to now: UInt64) {
            guard elapsedNanoseconds(from: entry.started, to: now) >= KeyFailureLimits.minute else { return }
            entry = Entry(started: now, running: entry.running)
        }

        package func isIdle(_ entry: Entry, now: UInt64) -> Bool {
            entry.running == 0 && elapsedNanoseconds(from: entry.started, to: now) >= KeyFailureLimits.minute
        }

        package func age(_ entry: Entry) -> UInt64? { entry.running == 0 ? entry.started : nil }
    }

    /// 0: no limit.
    package let perMinute: Int
    private let windows: AddressTable<Window>
    package static let minute: UInt64 = 60_000_000_000

    /// `capacity`: windows held at most. 65,536 (a few MiB) covers every address that may be
    /// guessing in a minute on a busy server; an attacker who floods the table from many
    /// addresses to forget its own window pays some 32,000 requests for each new handful of
    /// guesses (`AddressTable`).
    package init(perMinute: Int, capacity: Int = 65_536) {
        self.perMinute = perMinute
        windows = AddressTable(Window(), capacity: capacity)
    }

    /// Windows held at most.
    package var capacity: Int { windows.capacity }

    /// A check of a key from `address` for `room` begins: the ticket that settles it, or the
    /// seconds to wait when the failures and the checks running already reach the limit.
    package func begin(address: String, room: String, now: UInt64) -> Result<KeyCheckTicket, RetryAfter> {
        guard perMinute > 0 else { return .success(KeyCheckTicket(limits: nil, key: "", now: now)) }
        let key = address + " " + room
        return windows.update(key, now: now) { window in
            guard window.failures + window.running < perMinute else {
                return .failure(RetryAfter(seconds: window.failures >= perMinute ? Self.secondsLeft(window, now: now) : 1))
            }
            window.running += 1
            return .success(KeyCheckTicket(limits: self, key: key, now: now))
        }
    }

    /// Seconds to wait before trying again.
    package struct RetryAfter: Error {
        package let seconds: Int
    }

    /// A ticket's check ended: a wrong key counts.
    fileprivate func settle(key: String, failed: Bool, now: UInt64) {
        windows.update(key, now: now) { window in
            window.running = max(0, window.running - 1)
            if failed { window.failures += 1 }
        }
    }

    /// Counts a wrong key from `address` for `room` that needed no check (none was given).
    package func failed(address: String, room: String, now: UInt64) {
        guard perMinute > 0 else { return }
        windows.update(address + " " + room, now: now) { $0.failures += 1 }
    }

    /// Seconds until `address` may try a key for `room` again, or nil when it may now.
    package func retryAfter(address: String, room: String, now: UInt64) -> Int? {
        guard perMinute > 0, windows.count > 0 else { return nil }
        return windows.ifPresent(address + " " + room) { window -> Int? in
            guard window.failures >= perMinute, elapsedNanoseconds(from: window.started, to: now) < Self.minute else { return nil }
            return Self.secondsLeft(window, now: now)
        } ?? nil
    }

    /// Windows held now (tests).
    package var windowsHeld: Int { windows.count }

    /// Forgets windows that are over and have no check running.
    package func sweep(now: UInt64) { windows.sweep(now: now) }

    private static func secondsLeft(_ window: Window.Entry, now: UInt64) -> Int {
        Int((minute - min(minute, elapsedNanoseconds(from: window.started, to: now))) / 1_000_000_000) + 1
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
