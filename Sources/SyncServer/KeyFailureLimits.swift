import Synchronization
import Transport

/// Wrong presenter keys per client address and room: at most `perMinute` in a minute, then
/// that address is refused presenting in that room (429) until the minute is over. Key
/// guessing gets a few tries a minute instead of thousands a second. Safe from any thread.
final class KeyFailureLimits: Sendable {
    private struct Window {
        var started: UInt64
        var failures: Int
    }

    /// 0: no limit.
    let perMinute: Int
    private let windows = Mutex<[String: Window]>([:])
    private static let minute: UInt64 = 60_000_000_000

    init(perMinute: Int) { self.perMinute = perMinute }

    /// Counts a wrong key from `address` for `room`.
    func failed(address: String, room: String, now: UInt64) {
        guard perMinute > 0 else { return }
        windows.withLock { windows in
            let key = address + " " + room
            var window = windows[key] ?? Window(started: now, failures: 0)
            if elapsedNanoseconds(from: window.started, to: now) >= Self.minute { window = Window(started: now, failures: 0) }
            window.failures += 1
            windows[key] = window
        }
    }

    /// Seconds until `address` may try a key for `room` again, or nil when it may now.
    func retryAfter(address: String, room: String, now: UInt64) -> Int? {
        guard perMinute > 0 else { return nil }
        return windows.withLock { windows in
            guard let window = windows[address + " " + room], window.failures >= perMinute else { return nil }
            let elapsed = elapsedNanoseconds(from: window.started, to: now)
            guard elapsed < Self.minute else { return nil }
            return Int((Self.minute - elapsed) / 1_000_000_000) + 1
        }
    }

    /// Forgets windows that are over.
    func sweep(now: UInt64) {
        windows.withLock { windows in windows = windows.filter { elapsedNanoseconds(from: $0.value.started, to: now) < Self.minute } }
    }
}
