import ArgumentParser
import LoadTesting
import ScrollModel
import SyncClient
import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

struct Load: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load-test a server: presenters scroll, followers measure what arrives.",
        discussion: """
        Each room gets one presenter and --followers followers. Presenters send --rate updates \
        per second (or keep --in-flight updates outstanding) carrying t (monotonic µs); \
        followers record, for every update, how long until they held it or a newer one (staleness, the headline) and the age of every state they receive. One progress line a second on \
        standard error; a table at the end; --json FILE for a machine-readable report. The exit \
        status is 1 when a --max-… threshold is exceeded.
        """)

    @Argument(help: ArgumentHelp("The server, e.g. ws://127.0.0.1:8080 (wss:// for TLS).",
                                 discussion: "With several (nodes sharing rooms through Redis), presenters connect to the first and followers to the others in turn; name the first again to put followers there too."))
    var urls: [String]

    @Option(help: "Rooms.") var rooms = 1
    @Option(help: "Followers per room.") var followers = 100
    @Option(help: "Scroll updates per second per presenter.") var rate = 60.0
    @Option(help: ArgumentHelp("Keep this many updates in flight per presenter instead of a fixed rate.",
                               discussion: "An update is in flight until the presenter's own copy of its state comes back (wsfan's --window counts one until every follower has it, which keeps fewer states queued per follower: BENCHMARKS.md)."))
    var inFlight: Int?
    @Option(help: "Presenters replay this recording's moves at their times (scrollsync record), instead of a fixed rate; again from its start when it ends.")
    var trace: String?
    @Option(help: "With --trace: play it this many times as fast.") var speed = 1.0
    @Option(help: "Seconds of sending (per step with --max-rate).") var duration = 10.0
    @Option(help: "Seconds over which to open the connections.") var rampUp = 0.0
    @Flag(help: "Offer permessage-deflate.") var compress = false
    @Flag(help: "Accept any TLS certificate.") var insecure = false
    @Option(help: "Fraction of followers that stop reading for --pause seconds at a time.") var slowReaders = 0.0
    @Option(help: "Seconds a slow reader stops reading.") var pause = 1.0
    @Option(help: "Kernel receive buffer of slow readers in bytes; 0 keeps the system's (autotuned, as a terminal follower's).")
    var slowReceiveBuffer = 4096
    @Option(help: "Seconds to wait for the last states after sending stops.") var drain = 2.0
    @Option(help: "Event loops for the clients (default one per core).") var loops: Int?
    @Option(help: "Room name prefix.") var roomPrefix = "load"
    @Option(name: .customLong("source"), help: ArgumentHelp(
        "Connect from this local address (repeat for several; rooms are spread over them in turn).",
        discussion: "A server limits what one address may do (by default 60 new rooms a minute). Against a server on this machine, more than 50 rooms are spread over 127.0.0.2, 127.0.0.3, … by themselves; against another machine, give this machine's addresses."))
    var sources: [String] = []
    @Flag(help: "Client loops poll without sleeping: each uses a whole core, adds no wake-up time to the latency it measures, and spares the server the cost of waking it (on loopback the sender pays for that).")
    var busyPoll = false
    @Option(help: "Write the report as JSON to this file.") var json: String?
    @Option(help: "Fail when the loss, the fraction of (update, follower) pairs never covered (0.01 is 1 %), exceeds this.") var maxLoss: Double?
    @Option(help: "Fail when more connections fail or the server sends more errors than this.") var maxErrors: Int?
    @Option(help: "Fail when the age of received states at p99 exceeds this many ms.") var maxAgeP99: Double?
    @Option(help: "Fail when staleness p99 (an update sent until a follower holds it or a newer one) exceeds this many ms.")
    var maxStalenessP99: Double?
    @Option(help: "Fail when followers came to hold fewer than this fraction of (update, follower) pairs (0.99 is 99 %).") var minCoverage: Double?
    @Flag(help: "Find the highest rate that holds: no update refused, every follower on the newest state, staleness p99 within --staleness-bound.")
    var maxRate = false
    @Option(help: "Staleness p99 bound in ms for --max-rate.") var stalenessBound = 10.0

    func validate() throws {
        guard rooms > 0, followers >= 0, rate > 0, duration > 0, rampUp >= 0, drain >= 0 else {
            throw ValidationError("rooms, rate and duration must be positive; followers, ramp-up and drain not negative")
        }
        guard (0...1).contains(slowReaders), pause > 0 else { throw ValidationError("--slow-readers is a fraction 0…1; --pause is positive") }
        if let inFlight, inFlight < 1 { throw ValidationError("--in-flight must be at least 1") }
        if trace != nil, inFlight != nil || maxRate { throw ValidationError("--trace sets the presenters' pace: not with --in-flight or --max-rate") }
        guard speed > 0, speed <= 1000 else { throw ValidationError("--speed must be more than 0 and at most 1000") }
    }

    func run() throws {
        let bases = try urls.map(webSocketURL)
        guard let base = bases.first else { throw ValidationError("name the server: ws://HOST:PORT") }
        var configuration = LoadConfiguration(base: base)
        configuration.followerBases = Array(bases.dropFirst())
        configuration.rooms = rooms
        configuration.followers = followers
        configuration.rate = rate
        configuration.inFlight = inFlight
        configuration.duration = duration
        configuration.rampUp = rampUp
        configuration.compress = compress
        configuration.verifyTLS = !insecure
        configuration.slowReaders = slowReaders
        configuration.pause = pause
        configuration.slowReceiveBuffer = slowReceiveBuffer > 0 ? slowReceiveBuffer : nil
        configuration.drain = drain
        configuration.roomPrefix = roomPrefix
        configuration.busyPolling = busyPoll
        do {
            configuration.sources = try sources.map { try SocketAddress.resolve(host: $0, port: 0) }
        } catch {
            throw ValidationError("--source: \(error)")
        }
        // An IPv4 loopback server: all of 127/8 is this machine, so its addresses are free to use.
        if configuration.sources.isEmpty, rooms > LoadConfiguration.roomsPerSource, base.host.hasPrefix("127.") {
            configuration.sources = LoadConfiguration.loopbackSources(rooms: rooms)
        }
        if let trace {
            let recording = readRecording(trace)
            let moves = Trace(recording, name: trace.split(separator: "/").last.map(String.init) ?? trace, speed: speed)
            guard !moves.moves.isEmpty else { fail("\(SafeText.display(trace)) has no moves (no state) to replay") }
            configuration.trace = moves
        }
        let load = try LoadRun(configuration, loops: loops ?? EventLoopGroup.coreCount)
        load.connect { progress in
            log("[\(Int(progress.elapsed))s] connecting \(progress.connected)/\(progress.total), \(progress.errors) failed", to: STDERR_FILENO)
        }
        if load.connectStats.connectionsOpened == 0 {
            let reasons = load.connectStats.failureSummary
            fail("no connection opened" + (reasons.isEmpty ? " within the timeout" : ": " + reasons))
        }
        let printProgress: (LoadProgress) -> Void = { p in
            log("[\(Int(p.elapsed.rounded()))s] connected \(p.connected)/\(p.total)  updates/s \(Int(p.updatesPerSecond))  "
                + "deliveries/s \(Int(p.deliveriesPerSecond))  staleness p99 \(Double(p.stalenessP99Microseconds) / 1000) ms  "
                + "age p99 \(Double(p.ageP99Microseconds) / 1000) ms  errors \(p.errors)", to: STDERR_FILENO)
        }
        let report: LoadReport
        if maxRate {
            report = findMaxRate(load, progress: printProgress)
        } else {
            report = load.runPhase(rate: rate, progress: printProgress)
        }
        load.finish()
        print(report.table)
        let thresholds = LoadThresholds(maxLoss: maxLoss, maxErrors: maxErrors, maxAgeP99: maxAgeP99, maxStalenessP99: maxStalenessP99,
                                        minCoverage: minCoverage)
        if let json {
            guard let file = fopen(json, "w") else { fail("cannot write \(json): \(String(cString: strerror(errno)))") }
            // The report with the gate's verdict: each threshold, what was measured, passed or not.
            var bytes = report.json
            bytes.removeLast()  // its closing brace
            bytes += Array(#","gate":"#.utf8) + thresholds.gateJSON(report) + [UInt8(ascii: "}")]
            _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            fclose(file)
        }
        let violations = thresholds.violations(of: report)
        if !violations.isEmpty { fail("thresholds exceeded: " + violations.joined(separator: "; ")) }
        let given = thresholds.checks(of: report).filter { $0.name != "in-order" }
        if !given.isEmpty { log("thresholds met: " + given.map { "\($0.name) \(format($0.measured)) within \(format($0.limit))" }.joined(separator: ", "), to: STDERR_FILENO) }
    }

    /// `--max-rate`: the steps of a `MaxRateSearch`, each logged with its verdict.
    private func findMaxRate(_ load: LoadRun, progress: (LoadProgress) -> Void) -> LoadReport {
        let search = MaxRateSearch(start: rate, stalenessBound: stalenessBound)
        let found = search.run(load, progress: progress) { report in
            log("rate \(report.rate)/s: staleness p99 \(report.stalenessMs(99)) ms, \(Int(report.updatesPerSecond)) updates/s — \(search.verdict(report))",
                to: STDERR_FILENO)
        }
        guard let found else { fail("even \(rate) updates/s per presenter does not hold (staleness p99 within \(stalenessBound) ms, nothing refused)") }
        log("highest rate that holds (staleness p99 within \(stalenessBound) ms, nothing refused): \(found.rate) updates/s per presenter", to: STDERR_FILENO)
        return found
    }
}

/// A threshold's number as a person reads it: integers without a fraction.
private func format(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
}
