import Dispatch
import ScrollModel
import SyncClient
import Synchronization
import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// What `scrollsync load` does: rooms, followers, presenters and their pace.
public struct LoadConfiguration: Sendable {
    /// The server, e.g. `ws://127.0.0.1:8080`; rooms are `/rooms/PREFIX-N`.
    public var base: WebSocketURL
    /// Other nodes serving the same rooms: followers connect to these in turn (presenters
    /// to `base`). Empty: everyone connects to `base`.
    public var followerBases: [WebSocketURL] = []
    public var rooms = 1
    /// Followers per room.
    public var followers = 100
    /// Scroll updates per second per presenter.
    public var rate = 60.0
    /// Instead of a rate: keep this many updates in flight per presenter (the next one
    /// goes out when the presenter sees its own state come back). Measures throughput.
    public var inFlight: Int?
    /// Seconds each phase sends for.
    public var duration = 10.0
    /// Seconds over which connections are opened.
    public var rampUp = 0.0
    public var compress = false
    public var verifyTLS = true
    public var caFile: String?
    /// Fraction of followers that stop reading for `pause` seconds at a time (then read
    /// for a second). Their sockets get a 4 KiB receive buffer, so that what they miss
    /// piles up at the server, where conflation can replace it, as it does for a real
    /// client that is slow to read.
    public var slowReaders = 0.0
    /// The kernel receive buffer of slow readers in bytes (nil: the system's, as a
    /// terminal follower has); 4 KiB plays a reader with almost none.
    public var slowReceiveBuffer: Int? = 4096
    public var pause = 1.0
    /// Seconds after sending stops for the last states to arrive.
    public var drain = 2.0
    public var roomPrefix = "load"
    /// The client loops poll without sleeping (`EventLoop.busyPolling`).
    public var busyPolling = false

    /// Presenters replay these moves at their times (a recorded session, `--trace`), from
    /// the start again when it ends, instead of sending at `rate`.
    public var trace: Trace?
    /// Local addresses to connect from, a room's connections all from one, rooms spread over
    /// them in turn (empty: the system's choice). A server limits what one address may do
    /// (rooms created per minute, unclaimed rooms): many rooms need many addresses.
    public var sources: [SocketAddress] = []

    /// Rooms one address may create by the server's defaults without a refusal (it allows
    /// 60 a minute and 50 unclaimed): `loopbackSources` spreads over more past it.
    public static let roomsPerSource = 50

    /// 127.0.0.2, 127.0.0.3, …: enough loopback addresses (all of 127/8 is this machine's)
    /// for `rooms` rooms at `roomsPerSource` each, at most 250.
    public static func loopbackSources(rooms: Int) -> [SocketAddress] {
        let count = min(250, (rooms + roomsPerSource - 1) / roomsPerSource)
        return (0..<count).compactMap { try? SocketAddress.resolve(host: "127.0.0.\($0 + 2)", port: 0) }
    }

    public init(base: WebSocketURL) { self.base = base }

    public var connections: Int { rooms * (followers + 1) }
}

/// Progress of a running phase, once a second.
/// A presenter's moves from a recording (`--trace`): the way a person really scrolls, bursts
/// while paging and long pauses while talking.
public struct Trace: Sendable {
    public struct Move: Sendable {
        /// Seconds from the trace's start (already divided by the speed).
        public var seconds: Double
        public var offset: Double
        public var viewport: Double?
        public var content: Double?
    }

    /// The recording's file name, and how many times as fast it plays.
    public var name: String
    public var speed: Double
    public var moves: [Move]
    /// One pass (a trace plays again from its start when it ends).
    public var duration: Double { max(moves.last?.seconds ?? 0, 0.001) }

    /// The states of `recording` as moves, `speed` times as fast.
    public init(_ recording: Recording, name: String, speed: Double) {
        self.name = name
        self.speed = speed
        let states = recording.events.compactMap { event -> (Double, ScrollState)? in
            if case .state(let state) = event.message { (event.seconds, state) } else { nil }
        }
        let start = states.first?.0 ?? 0
        moves = states.map { Move(seconds: ($0.0 - start) / speed, offset: $0.1.offset, viewport: $0.1.viewport, content: $0.1.content) }
    }
}

public struct LoadProgress: Sendable {
    public var elapsed: Double
    public var connected: Int
    public var total: Int
    public var updatesPerSecond: Double
    public var deliveriesPerSecond: Double
    /// Age of received states at p99, and staleness at p99, so far (µs).
    public var ageP99Microseconds: UInt64
    public var stalenessP99Microseconds: UInt64
    public var errors: Int
}

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

/// Whether followers ended on their room's newest state.
public struct Reach: Sendable {
    public var followers = 0
    public var reached = 0
    public var slowFollowers = 0
    public var slowReached = 0

    func merged(_ other: Reach) -> Reach {
        Reach(followers: followers + other.followers, reached: reached + other.reached,
              slowFollowers: slowFollowers + other.slowFollowers, slowReached: slowReached + other.slowReached)
    }
}

/// A room as the load test tracks it across loops.
final class RoomTrack: Sendable {
    let name: String
    /// The newest `seq` the room's presenter has seen come back.
    let newestSeq = Atomic<Int>(0)
    let followersOpen = Atomic<Int>(0)
    /// When (the `t`, monotonic µs) each update of this phase was sent, in order: the
    /// presenter appends, followers read it on their loops to see which states a state
    /// they receive covers.
    let sent = Mutex<[Int64]>([])
    /// Where in each 1/rate interval its presenter sends (0 ..< 1): rooms spread evenly, not
    /// all in the same millisecond, as people's scrolling is.
    let phase: Double

    init(name: String, phase: Double = 0) {
        self.name = name
        self.phase = phase
    }

    /// Calls `body` with the send times in (`after`, `upTo`]: the updates a follower that
    /// held the state sent at `after` covers on receiving the one sent at `upTo`.
    func covered(after: Int64, upTo: Int64, _ body: (Int64) -> Void) {
        sent.withLock { times in
            var low = 0
            var high = times.count
            while low < high {  // the first time > after
                let middle = (low + high) / 2
                if times[middle] <= after { low = middle + 1 } else { high = middle }
            }
            var index = low
            while index < times.count, times[index] <= upTo {
                body(times[index])
                index += 1
            }
        }
    }
}

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
