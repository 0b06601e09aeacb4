import Dispatch
import ScrollModel
import SyncClient
import Synchronization
import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// Runs a load test on its own event loops. Use from one thread.
public final class LoadRun: @unchecked Sendable {
    public let configuration: LoadConfiguration
    private let group: EventLoopGroup
    private let tls: TLSContext?
    private let address: SocketAddress
    private let followerAddresses: [SocketAddress]
    private let probes: [LoopProbes]
    private let rooms: [RoomTrack]
    /// Seconds from the first connect to the last connection opened or failed.
    public private(set) var connectSeconds = 0.0
    /// What `connect` saw: connections opened, and why the others failed.
    public private(set) var connectStats = LoadStats()

    public init(_ configuration: LoadConfiguration, loops: Int = EventLoopGroup.coreCount) throws {
        self.configuration = configuration
        group = try EventLoopGroup(count: loops, busyPolling: configuration.busyPolling)
        tls = configuration.base.secure ? try TLSContext(clientVerifying: configuration.verifyTLS, caFile: configuration.caFile) : nil
        address = try SocketAddress.resolve(host: configuration.base.host, port: configuration.base.port)
        followerAddresses = try configuration.followerBases.map { try SocketAddress.resolve(host: $0.host, port: $0.port) }
        probes = group.loops.map { LoopProbes(loop: $0, slowReceiveBuffer: configuration.slowReceiveBuffer) }
        rooms = (0..<configuration.rooms).map {
            RoomTrack(name: "\(configuration.roomPrefix)-\($0)", phase: Double($0) / Double(configuration.rooms))
        }
        group.start()
    }

    deinit { group.shutdown() }

    // MARK: Connecting

    /// Opens every connection (presenters first), spread over the ramp-up time; returns
    /// when all have opened or failed, or after `timeout` seconds.
    public func connect(timeout: Double = 60, progress: (LoadProgress) -> Void = { _ in }) {
        let config = configuration
        let total = config.connections
        let slowEvery = config.slowReaders > 0 ? max(1, Int((1 / config.slowReaders).rounded())) : 0
        // Without a ramp-up, 64 connections every 50 µs rather than all in one loop
        // iteration: a burst of 10,000 connect calls (≈ 40 µs each on loopback) would hold
        // the loop for 0.4 s before it sends a single upgrade request. Each group of 64 is
        // one task and one timer per loop, not one per connection.
        let group = config.rampUp > 0 && total > 1 ? 1 : 64
        let settled = Tally(target: total)
        for probe in probes { probe.loop.execute { probe.settled = settled } }  // before any of its connections
        var pending = probes.map { _ in [@Sendable () -> Void]() }
        func dispatch(delay: Double) {
            for (probe, opens) in zip(probes, pending) where !opens.isEmpty {
                probe.loop.execute {
                    probe.loop.schedule(after: UInt64(delay * 1e9)) { for open in opens { open() } }
                }
            }
            pending = probes.map { _ in [] }
        }
        let start = monotonicMicroseconds()  // the first group may connect while the rest are built
        var index = 0
        for (roomIndex, room) in rooms.enumerated() {
            for member in 0...config.followers {
                let probeIndex = index % probes.count
                let loopProbes = probes[probeIndex]
                let isPresenter = member == 0
                let slow = !isPresenter && slowEvery > 0 && (roomIndex * config.followers + member) % slowEvery == 0
                let target = "/rooms/\(room.name)" + (isPresenter ? "?role=presenter" : "")
                let node = isPresenter || config.followerBases.isEmpty ? nil : (roomIndex * config.followers + member - 1) % config.followerBases.count
                let url = (node.map { config.followerBases[$0] } ?? config.base).with(target: target)
                let address = node.map { followerAddresses[$0] } ?? address
                let source = config.sources.isEmpty ? nil : config.sources[roomIndex % config.sources.count]
                let tls = tls
                pending[probeIndex].append {
                    loopProbes.open(url: url, address: address, source: source, tls: tls, compress: config.compress, room: room,
                                    presenter: isPresenter, slow: slow)
                }
                if (index + 1) % group == 0 {
                    dispatch(delay: group == 1 ? config.rampUp * Double(index) / Double(total) : Double(index / group) * 50e-6)
                }
                index += 1
            }
        }
        dispatch(delay: Double(max(0, index - 1) / group) * 50e-6)  // the last, partial group
        // Woken when the last connection opens or fails, and once a second to say how far it got.
        while true {
            let all = settled.wait(timeout: 1)
            let stats = collect()
            let elapsed = Double(monotonicMicroseconds() - start) / 1e6
            if !all {
                progress(LoadProgress(elapsed: elapsed, connected: stats.connectionsOpened, total: total, updatesPerSecond: 0,
                                      deliveriesPerSecond: 0, ageP99Microseconds: 0, stalenessP99Microseconds: 0,
                                      errors: stats.failures.values.reduce(0, +)))
            }
            if all || elapsed > max(timeout, config.rampUp + 30) {
                let settledAt = probes.map { probe in onLoop(probe) { probe.lastSettledAt } }.max() ?? 0
                connectSeconds = settledAt > start ? Double(settledAt - start) / 1e6 : elapsed
                connectStats = stats
                break
            }
        }
        usleep(300_000)  // let the welcomes and presence settle
    }

    // MARK: Running

    /// Sends at `rate` (or with `inFlight` updates outstanding) for the configured
    /// duration, waits for the drain, and reports what every client saw.
    public func runPhase(rate: Double, progress: (LoadProgress) -> Void = { _ in }) -> LoadReport {
        let config = configuration
        for room in rooms { room.sent.withLock { $0.removeAll() } }
        for probe in probes { probe.loop.execute { probe.beginPhase() } }
        let seqAtStart = rooms.map { $0.newestSeq.load(ordering: .acquiring) }
        usleep(50_000)
        let started = monotonicMicroseconds()
        for probe in probes {
            probe.loop.execute { probe.startSending(rate: rate, inFlight: config.inFlight, trace: config.trace, slowPause: config.pause) }
        }
        var last = collect()
        var lastTime = started
        let deadline = started + Int64(config.duration * 1e6)
        while monotonicMicroseconds() < deadline {
            usleep(UInt32(min(1_000_000, max(10_000, deadline - monotonicMicroseconds()))))
            let now = monotonicMicroseconds()
            let stats = collect()
            let seconds = Double(now - lastTime) / 1e6
            progress(LoadProgress(
                elapsed: Double(now - started) / 1e6, connected: stats.connectionsOpened, total: config.connections,
                updatesPerSecond: Double(stats.updatesSent - last.updatesSent) / seconds,
                deliveriesPerSecond: Double(stats.deliveries - last.deliveries) / seconds,
                ageP99Microseconds: stats.latency.totalCount > 0 ? stats.latency.valueAtPercentile(99) : 0,
                stalenessP99Microseconds: stats.staleness.totalCount > 0 ? stats.staleness.valueAtPercentile(99) : 0,
                errors: stats.serverErrors + stats.failures.values.reduce(0, +)))
            last = stats
            lastTime = now
        }
        let sendingTime = Double(monotonicMicroseconds() - started) / 1e6
        for probe in probes { probe.loop.execute { probe.stopSending() } }
        usleep(UInt32(config.drain * 1e6))
        let stats = collect()
        let reach = probes.map { probe in onLoop(probe) { probe.reach() } }.reduce(Reach()) { $0.merged($1) }
        let accepted = zip(rooms, seqAtStart).map { $0.newestSeq.load(ordering: .acquiring) - $1 }
        let followersPerRoom = rooms.map { $0.followersOpen.load(ordering: .acquiring) }
        let expected = zip(accepted, followersPerRoom).reduce(0) { $0 + $1.0 * $1.1 }
        let pairs = zip(rooms, followersPerRoom).reduce(0) { $0 + $1.0.sent.withLock { $0.count } * $1.1 }
        return LoadReport(configuration: config, rate: rate, sendingSeconds: sendingTime, stats: stats, expectedDeliveries: expected,
                          statePairs: pairs, reach: reach, cpuSeconds: Self.cpuSeconds(), connectSeconds: connectSeconds,
                          updatesAccepted: accepted.reduce(0, +))
    }

    /// Closes every connection, and returns once they are closed (at most 3 s).
    public func finish() {
        let open = probes.map { probe in onLoop(probe) { probe.openCount } }.reduce(0, +)
        let closed = Tally(target: open)
        for probe in probes {
            probe.loop.execute {
                probe.closed = closed
                probe.closeAll()
            }
        }
        _ = closed.wait(timeout: 3)
    }

    // MARK: Collecting

    private func collect() -> LoadStats {
        probes.map { probe in onLoop(probe) { probe.stats } }.reduce(into: LoadStats()) { $0.merge($1) }
    }

    /// Runs `body` on the probe's loop and waits for its answer.
    private func onLoop<T: Sendable>(_ probe: LoopProbes, _ body: @escaping @Sendable () -> T) -> T {
        let answer = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        probe.loop.execute {
            answer.withLock { $0 = body() }
            done.signal()
        }
        done.wait()
        return answer.withLock { $0! }
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// Counts events from the loops up to `target`, and wakes the thread that waits for them all.
final class Tally: Sendable {
    private let count = Atomic<Int>(0)
    private let target: Int
    private let reached = DispatchSemaphore(value: 0)

    init(target: Int) {
        self.target = target
        if target <= 0 { reached.signal() }
    }

    func add() {
        if count.add(1, ordering: .relaxed).newValue == target { reached.signal() }
    }

    /// Whether all came within `timeout` seconds (once true, true again).
    func wait(timeout: Double) -> Bool {
        guard reached.wait(timeout: .now() + timeout) == .success else { return false }
        reached.signal()
        return true
    }
}
