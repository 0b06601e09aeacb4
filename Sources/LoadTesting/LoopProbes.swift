import Dispatch
import ScrollModel
import SyncClient
import Synchronization
import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// The clients of one event loop and their measurements. Loop-confined.
final class LoopProbes: @unchecked Sendable {
    let loop: EventLoop
    /// Updated for every delivery, on the loop's thread only and never re-entrantly: no
    /// run-time exclusivity check (as for a follower's `lastSeq`).
    @exclusivity(unchecked) var stats = LoadStats()
    /// When the last connection on this loop opened or failed (monotonic µs).
    var lastSettledAt: Int64 = 0
    /// Counts connections as they open or fail (`connect` waits for all), and open ones as
    /// they close (`finish` waits for all).
    var settled: Tally?
    var closed: Tally?
    /// Connections open on this loop.
    var openCount: Int { followers.count(where: { $0.client?.isOpen == true }) + presenters.count(where: { $0.client?.isOpen == true }) }
    private var followers: [Follower] = []
    private var presenters: [Presenter] = []
    private var sending = false
    private var trace: Trace?
    /// The kernel receive buffer of slow readers (nil: the system's, autotuned).
    let slowReceiveBuffer: Int?

    init(loop: EventLoop, slowReceiveBuffer: Int?) {
        self.loop = loop
        self.slowReceiveBuffer = slowReceiveBuffer
    }

    final class Follower {
        let room: RoomTrack
        let slow: Bool
        var client: WebSocketClient?
        @exclusivity(unchecked) var lastSeq = 0
        /// The `t` of the newest state this follower holds (monotonic µs).
        @exclusivity(unchecked) var heldT: Int64 = 0
        var open = false
        /// A slow reader that resumed reading: when, the newest update sent before then,
        /// and the states it has read since (until it holds that update or a newer one).
        var resumedAt: Int64?
        var newestAtResume: Int64 = 0
        var readSinceResume = 0
        init(room: RoomTrack, slow: Bool) {
            self.room = room
            self.slow = slow
        }
    }

    final class Presenter {
        let room: RoomTrack
        var client: WebSocketClient?
        var sent = 0
        var sentThisPhase = 0
        var outstanding = 0
        var phaseStart: Int64 = 0
        init(room: RoomTrack) { self.room = room }
    }

    func open(url: WebSocketURL, address: SocketAddress, source: SocketAddress?, tls: TLSContext?, compress: Bool, room: RoomTrack,
              presenter: Bool, slow: Bool) {
        let started = monotonicMicroseconds()
        let follower = presenter ? nil : Follower(room: room, slow: slow)
        let driver = presenter ? Presenter(room: room) : nil
        var opened = false
        let client = WebSocketClient.connect(url, address: address, on: loop, tls: tls, protocols: [protocolName], deflate: compress,
                                              receiveBuffer: slow ? slowReceiveBuffer : nil, source: source) { [self] client, event in
            switch event {
            case .open:
                opened = true
                lastSettledAt = monotonicMicroseconds()
                settled?.add()
                stats.connectionsOpened += 1
                _ = stats.handshake.record(UInt64(max(0, monotonicMicroseconds() - started)))
                if let follower {
                    follower.open = true
                    room.followersOpen.add(1, ordering: .relaxed)
                }
            case .text(let bytes):
                if let follower { receive(bytes, follower) } else if let driver { receive(bytes, driver) }
            case .binary, .pong:
                break
            case .closed(let code, _, let error):
                if !opened {
                    lastSettledAt = monotonicMicroseconds()
                    settled?.add()
                    stats.failures[error ?? "closed \(code.rawValue)", default: 0] += 1
                } else if follower?.open == true {
                    follower?.open = false
                    room.followersOpen.subtract(1, ordering: .relaxed)
                }
                if opened { closed?.add() }
                _ = client
            }
        }
        if let follower {
            follower.client = client
            followers.append(follower)
        } else if let driver {
            driver.client = client
            presenters.append(driver)
        }
    }

    private func receive(_ bytes: UnsafeRawBufferPointer, _ follower: Follower) {
        if FastScan.hasPrefix("{\"type\":\"state\"", bytes) {
            guard let seq = FastScan.integer(after: "\"seq\":", in: bytes).map(Int.init) else { return }
            if seq <= follower.lastSeq {
                stats.outOfOrder += 1
                return
            }
            let gap = follower.lastSeq > 0 ? seq - follower.lastSeq - 1 : 0
            follower.lastSeq = seq
            // Deliveries per second count the sending window only; the drain's still count
            // for coverage and staleness (below) and for reaching the final state.
            if sending { stats.deliveries += 1 } else { stats.drainDeliveries += 1 }
            stats.skipped &+= gap
            if let t = FastScan.lastInteger(after: "\"t\":", in: bytes) {
                let now = monotonicMicroseconds()
                let age = UInt64(max(0, now - t))
                _ = stats.latency.record(age)
                if follower.slow { _ = stats.slowStaleness.record(age) }
                // Every update sent since the state this follower held, up to this one, is
                // now covered: the follower holds it or a newer one. How long that took is
                // what a user feels (staleness), whether or not that update itself arrived.
                if t > follower.heldT {
                    follower.room.covered(after: follower.heldT, upTo: t) { sentAt in
                        _ = stats.staleness.record(UInt64(max(0, now - sentAt)))
                        stats.coveredPairs += 1
                    }
                    follower.heldT = t
                }
            }
            if follower.slow {
                stats.slowDeliveries += 1
                stats.slowSkipped &+= gap
                if let resumedAt = follower.resumedAt {
                    follower.readSinceResume += 1
                    if follower.heldT >= follower.newestAtResume {
                        _ = stats.slowCatchUp.record(UInt64(max(0, monotonicMicroseconds() - resumedAt)))
                        _ = stats.slowBacklog.record(UInt64(follower.readSinceResume))
                        follower.resumedAt = nil
                    }
                }
            }
        } else if FastScan.hasPrefix("{\"type\":\"welcome\"", bytes) {
            follower.lastSeq = FastScan.integer(after: "\"seq\":", in: bytes).map(Int.init) ?? 0
            follower.heldT = FastScan.lastInteger(after: "\"t\":", in: bytes) ?? 0
        } else if FastScan.hasPrefix("{\"type\":\"error\"", bytes) {
            stats.serverErrors += 1
        }
    }

    private func receive(_ bytes: UnsafeRawBufferPointer, _ presenter: Presenter) {
        if FastScan.hasPrefix("{\"type\":\"state\"", bytes), let seq = FastScan.integer(after: "\"seq\":", in: bytes) {
            let seq = Int(seq)
            if seq > presenter.room.newestSeq.load(ordering: .relaxed) { presenter.room.newestSeq.store(seq, ordering: .releasing) }
            if presenter.outstanding > 0 { presenter.outstanding -= 1 }
            if sending, inFlight != nil { fill(presenter) }
        } else if FastScan.hasPrefix("{\"type\":\"welcome\"", bytes) {
            if let seq = FastScan.integer(after: "\"seq\":", in: bytes) { presenter.room.newestSeq.store(Int(seq), ordering: .releasing) }
        } else if FastScan.hasPrefix("{\"type\":\"error\"", bytes) {
            stats.serverErrors += 1
        }
    }

    // MARK: Phases

    private var rate = 0.0
    private var inFlight: Int?
    private var phaseStart: Int64 = 0

    func beginPhase() {
        stats.resetMeasurements()
        // What followers hold now was sent before this phase: coverage counts this phase's.
        let start = monotonicMicroseconds()
        for follower in followers { follower.heldT = start }
    }

    func startSending(rate: Double, inFlight: Int?, trace: Trace?, slowPause: Double) {
        sending = true
        self.trace = trace
        self.rate = rate
        self.inFlight = inFlight
        phaseStart = monotonicMicroseconds()
        for presenter in presenters {
            presenter.sentThisPhase = 0
            presenter.outstanding = 0
        }
        if trace != nil {
            traceTick()
        } else if inFlight != nil {
            for presenter in presenters { fill(presenter) }
        } else {
            tick()
        }
        if followers.contains(where: \.slow) { holdSlowReaders(for: slowPause) }
    }

    func stopSending() {
        sending = false
        for follower in followers where follower.slow { follower.client?.channel?.holdReading(false) }
    }

    func closeAll() {
        for follower in followers { follower.client?.close() }
        for presenter in presenters { presenter.client?.close() }
    }

    func reach() -> Reach {
        var reach = Reach()
        for follower in followers where follower.open {
            let newest = follower.room.newestSeq.load(ordering: .acquiring)
            if follower.slow {
                reach.slowFollowers += 1
                if follower.lastSeq == newest { reach.slowReached += 1 }
            } else {
                reach.followers += 1
                if follower.lastSeq == newest { reach.reached += 1 }
            }
        }
        return reach
    }

    /// Rate mode: send what is due since the phase began, then check again in 1 ms or 1/rate.
    private func tick() {
        guard sending else { return }
        let elapsed = Double(monotonicMicroseconds() - phaseStart) / 1e6
        for presenter in presenters {
            let intervals = elapsed * rate - presenter.room.phase
            let due = intervals < 0 ? 0 : Int(intervals) + 1
            var burst = 0
            while presenter.sentThisPhase < due && burst < 1000 {
                send(presenter)
                burst += 1
            }
        }
        loop.schedule(after: UInt64(max(1e6, min(1e9 / rate, 10e6)))) { [self] in tick() }
    }

    /// Trace mode: each presenter sends the trace's moves that are due, passes counted from
    /// the phase's start; then waits for the next move (at most 10 ms).
    private func traceTick() {
        guard sending, let trace, !trace.moves.isEmpty else { return }
        let elapsed = Double(monotonicMicroseconds() - phaseStart) / 1e6
        let pass = Int(elapsed / trace.duration)
        let into = elapsed - Double(pass) * trace.duration
        let due = pass * trace.moves.count + (trace.moves.firstIndex { $0.seconds > into } ?? trace.moves.count)
        for presenter in presenters {
            var burst = 0
            while presenter.sentThisPhase < due && burst < 1000 {
                let move = trace.moves[presenter.sentThisPhase % trace.moves.count]
                send(presenter, offset: move.offset, viewport: move.viewport, content: move.content)
                burst += 1
            }
        }
        let next = trace.moves.first { $0.seconds > into }.map { $0.seconds - into } ?? (trace.duration - into)
        loop.schedule(after: UInt64(max(1e6, min(next * 1e9, 10e6)))) { [self] in traceTick() }
    }

    /// In-flight mode: top the presenter up to its window.
    private func fill(_ presenter: Presenter) {
        guard let window = inFlight else { return }
        while presenter.outstanding < window { send(presenter) }
    }

    private func send(_ presenter: Presenter, offset: Double? = nil, viewport: Double? = 40, content: Double? = 100_040) {
        presenter.sent += 1
        presenter.sentThisPhase += 1
        presenter.outstanding += 1
        var t = monotonicMicroseconds()
        // Each update's t is unique and increasing, so that followers can tell them apart.
        presenter.room.sent.withLock { times in
            if let last = times.last, t <= last { t = last + 1 }
        }
        let update = ClientMessage.scroll(ScrollUpdate(
            offset: offset ?? Double(presenter.sent % 100_000), viewport: viewport, content: content, t: String(t)))
        if presenter.client?.send(text: update.encoded) == true {
            stats.updatesSent += 1
            presenter.room.sent.withLock { $0.append(t) }
        }
    }

    private func holdSlowReaders(for seconds: Double) {
        guard sending else { return }
        for follower in followers where follower.slow { follower.client?.channel?.holdReading(true) }
        loop.schedule(after: UInt64(seconds * 1e9)) { [self] in
            guard sending else { return }
            let now = monotonicMicroseconds()
            for follower in followers where follower.slow {
                follower.resumedAt = now
                follower.newestAtResume = follower.room.sent.withLock { $0.last } ?? 0
                follower.readSinceResume = 0
                follower.client?.channel?.holdReading(false)
            }
            loop.schedule(after: 1_000_000_000) { [self] in holdSlowReaders(for: seconds) }
        }
    }
}
