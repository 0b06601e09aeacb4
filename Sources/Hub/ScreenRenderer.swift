package import Access
import DequeModule
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// What the terminal readers cost, for /metrics.
package final class ScreenCounters: Sendable {
    /// Readers streaming now.
    package let readers = Atomic<Int>(0)
    /// Frames rendered (one per size per change of a room) and handed to readers.
    package let framesRendered = Atomic<Int>(0)
    package let framesSent = Atomic<Int>(0)
    package let bytesSent = Atomic<Int>(0)
    /// Frames replaced in a reader's slot before it took them (it was behind).
    package let framesConflated = Atomic<Int>(0)
}

/// The thread that renders rooms' terminal views, so that no event loop waits for a render:
/// rooms wait in turn, each at most once (a room queued again before its turn renders once,
/// with everything that changed meanwhile). Started with the first room; `stop` ends it.
package final class ScreenRenderer: Sendable {
    private struct Queue {
        var rooms = Deque<ScreenReaders>()
        var started = false
        var stopped = false
    }

    private let queue = Mutex(Queue())
    private let wakeup = Semaphore()
    package let counters = ScreenCounters()

    func schedule(_ room: ScreenReaders) {
        let start = queue.withLock { queue -> Bool? in
            guard !queue.stopped else { return nil }
            queue.rooms.append(room)
            defer { queue.started = true }
            return !queue.started
        }
        guard let start else { return }
        if start { pthread_detach(spawnThread { [self] in run() }) }
        wakeup.signal()
    }

    package func stop() {
        queue.withLock { queue in
            queue.stopped = true
            queue.rooms.removeAll()
        }
        wakeup.signal()
    }

    private func run() {
        while true {
            wakeup.wait()
            let next = queue.withLock { queue -> (room: ScreenReaders?, stop: Bool) in
                queue.stopped ? (nil, true) : (queue.rooms.popFirst(), false)
            }
            if next.stop { return }
            next.room?.render()
        }
    }
}
