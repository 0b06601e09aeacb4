import DequeModule
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// A thread for clients' slow work (a key's slow hash, a recording's page), so that no event
/// loop spends the milliseconds it takes. Fair between clients: each address has its own queue
/// and the thread takes one job from each in turn, so one address's burst delays another's job
/// by at most one job per address waiting. Bounded: at most `capacity` jobs wait, `perAddress`
/// from one address; beyond that `perform` answers false at once (the caller says 503). The
/// thread starts with the first job; `stop` ends it and drops what waits.
package final class FairWorker: Sendable {
    private typealias Job = @Sendable () -> Void

    private struct Queues {
        var byAddress: [String: Deque<Job>] = [:]
        /// Addresses with jobs, in turn.
        var turns = Deque<String>()
        var count = 0
        var started = false
        var stopped = false
    }

    private let queues = Mutex(Queues())
    private let wakeup = Semaphore()
    package let capacity: Int
    package let perAddress: Int

    package init(capacity: Int, perAddress: Int) {
        self.capacity = capacity
        self.perAddress = perAddress
    }

    /// Runs `work` on the worker's thread in `address`'s turn; false (and `work` never runs)
    /// when `capacity` jobs wait, `perAddress` of them from `address`, or the worker stopped.
    package func perform(from address: String, _ work: @escaping @Sendable () -> Void) -> Bool {
        let queued = queues.withLock { queues -> Bool? in
            guard !queues.stopped, queues.count < capacity, queues.byAddress[address, default: []].count < perAddress else { return nil }
            if queues.byAddress[address]?.isEmpty ?? true { queues.turns.append(address) }
            queues.byAddress[address, default: []].append(work)
            queues.count += 1
            defer { queues.started = true }
            return !queues.started
        }
        guard let start = queued else { return false }
        if start { pthread_detach(spawnThread { [self] in run() }) }
        wakeup.signal()
        return true
    }

    /// Jobs waiting now (not the one running).
    package var waiting: Int { queues.withLock { $0.count } }

    /// Ends the thread after the job it runs now; the jobs that wait never run.
    package func stop() {
        queues.withLock { queues in
            queues.stopped = true
            queues.byAddress.removeAll()
            queues.turns.removeAll()
            queues.count = 0
        }
        wakeup.signal()
    }

    private enum Turn {
        case run(Job)
        case idle
        case stopped
    }

    /// The first address's next job, which then waits for its next turn behind the others.
    private func next() -> Turn {
        queues.withLock { queues in
            if queues.stopped { return .stopped }
            guard let address = queues.turns.popFirst(), let job = queues.byAddress[address]?.popFirst() else { return .idle }
            queues.count -= 1
            if queues.byAddress[address]?.isEmpty ?? true {
                queues.byAddress[address] = nil
            } else {
                queues.turns.append(address)
            }
            return .run(job)
        }
    }

    private func run() {
        while true {
            wakeup.wait()
            turns: while true {
                switch next() {
                case .run(let job): job()
                case .idle: break turns
                case .stopped: return
                }
            }
        }
    }
}
