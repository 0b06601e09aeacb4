import Cluster
import Logging
import Operations
import RedisClient
import RoomKit
import ScrollModel
@testable import SyncServer
import Transport

/// A deterministic simulation of one room served by several nodes (docs/cluster.md §8): each
/// node is a real `Server` (hub, `RoomMachine`s, `RedisRoomEngine`) on one embedded loop whose
/// clock is virtual, sharing the room through `SimRedis`; members are real WebSocket clients.
/// A seeded schedule of joins, scrolls, takes, releases, documents, leaves and faults (lost
/// Redis connections, paused and crashed nodes, Redis restarted empty) runs against it; every
/// member's messages are checked as they come (I1, I3, I5), the hash on every write (I4), and
/// after quiescence every member and a late joiner on every node (I2, I6).
final class ClusterSimulation {
    struct Options {
        var nodes = 3
        var steps = 80
        var faults = true
        /// Redis itself stops for a while too (SIGSTOP; off by default so that the kept seeds'
        /// schedules stay as they were).
        var redisStops = false
        /// How far each node's wall clock (its `seq` clock) may be off, either way: real nodes'
        /// clocks differ (NTP keeps a LAN within a millisecond or two). With one clock for all,
        /// nodes that number alone at the same instant numbered alike (seed 20126 with Redis
        /// stops, 40004), a split real clocks make unlikely. Drawn per node from its own
        /// generator, so the schedule stays the seed's.
        var clockSpreadMicroseconds = 2_000
        /// Follow keys in the schedule (`ClusterSimulation+Keys`): presenters join with a token,
        /// some set or change the room's follow key, followers join with the right key, a wrong
        /// one or none; I7 checked after quiescence. Off by default so that the kept seeds'
        /// schedules stay as they were.
        var followKeys = false
        /// Every node signs its channel messages with the same `redis.secret` (`ChannelSigner`;
        /// `SimScripts` signs what the scripts publish as the Lua does).
        var signed = false
        /// Fold every event into a digest (`Outcome.digest`): a replay's check, off by default
        /// for speed.
        var digest = false
    }

    /// What a run found: the broken invariants (empty: none) and the schedule's last steps.
    struct Outcome {
        var seed: UInt64
        var broken: [String]
        var trace: [String]
        /// Faults the schedule made (lost connections, pauses, crashes, Redis restarts).
        var faults = 0
        /// With `Options.digest`: the digest of every event recorded, and how many.
        var digest: UInt64?
        var events = 0
        /// The invariants broken, each once ("I1", "I5", …).
        var invariants: [String] { Array(Set(broken.compactMap { $0.split(separator: ":").first.map(String.init) })).sorted() }
        var description: String {
            "seed \(seed): " + (broken.isEmpty ? "no invariant broken" : broken.joined(separator: "\n  "))
                + "\n  trace (last \(trace.count) steps):\n    " + trace.joined(separator: "\n    ")
        }
    }

    let seed: UInt64
    let options: Options
    let loop: EventLoop
    let redis: SimRedis
    var random: SimRandom
    /// Every node's session ids (its members', its node id), seeded from the seed: with the
    /// process's source (a random seed, one counter for the process) a seed's ids differed
    /// from run to run and from a campaign to a replay alone, and what depends on them with it.
    let sessionIDs: SessionIDSource
    /// Draws each node's clock offset (`Options.clockSpreadMicroseconds`).
    private var clocks: SimRandom
    /// Each node's server (nil: crashed); `pausedUntil` its members' and links' freeze.
    private(set) var servers: [Server?] = []
    private var pausedUntil: [UInt64] = []
    private(set) var members: [SimMember] = []
    private var checker = SimChecker()
    private var trace: [String] = []
    private var joins = 0
    private var faults = 0
    /// The follow key a presenter gave last (`Options.followKeys`): the one followers try.
    var followKey: String?
    /// The offset of the last scroll sent.
    private(set) var offset = 0
    static let room = "sim"
    /// The simulated `seq` clock at loop time 0, in microseconds (a year after 2026-01-01).
    static let epoch = 31_536_000_000_000
    /// The loop's clock at the start, the same for every run (an embedded loop's clock starts at
    /// the monotonic clock's time otherwise: a run's times and `seq`s depended on when it ran).
    static let start: UInt64 = 86_400_000_000_000

    init(seed: UInt64, options: Options = Options()) throws {
        self.seed = seed
        self.options = options
        loop = try EventLoop.embedded(startingAt: Self.start)
        redis = SimRedis(loop: loop, seed: seed)
        redis.digesting = options.digest
        sessionIDs = SessionIDSource(seed: seed ^ 0x1D5_1D5_1D5_1D5)
        random = SimRandom(seed: seed)
        clocks = SimRandom(seed: seed ^ 0xC10C_C10C)
        for _ in 0..<options.nodes { try addNode() }
        advance(50_000_000)
    }

    private func addNode() throws {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = nil
        configuration.redisURL = "redis://simulated.invalid:6379"
        if options.followKeys { configuration.authSecret = Self.authSecret }
        if options.signed { configuration.redisSecret = Self.redisSecret }
        let index = servers.count
        let server = try Server(configuration: configuration, logger: Logger(label: "sim") { _ in SwiftLogNoOpLogHandler() },
                                embedded: loop, redisLinks: redis.links(node: index), sessionIDs: sessionIDs)
        // Each node's wall clock, on the simulation's time and off by its own offset (a new
        // hash's `seq` base, a new lease's first state).
        let spread = UInt64(options.clockSpreadMicroseconds)
        let offset = Int(clocks.next(in: 0...2 * spread)) - Int(spread)
        (server.engine as? RedisRoomEngine)?.seqClock = { [loop] in Self.epoch + Int(loop.now / 1000) + offset }
        // Its wall clock in ms since 1970 (presence counts in Redis): the same time.
        (server.engine as? RedisRoomEngine)?.wallClock = { [loop] in 1_767_225_600_000 + (Self.epoch + Int(loop.now / 1000) + offset) / 1000 }
        servers.append(server)
        pausedUntil.append(0)
    }

    deinit {
        for server in servers { server?.shutdown() }
    }

    // MARK: Running

    /// Runs the schedule, then quiescence and the checks after it.
    func run() -> Outcome {
        for _ in 0..<options.steps {
            step()
            advance(random.next(in: 0...30_000_000))
        }
        quiesce()
        return outcome
    }

    var outcome: Outcome {
        var broken = checker.broken
        broken += redis.hashSeqDecreases.prefix(5).map { "I4: \($0)" }
        return Outcome(seed: seed, broken: broken, trace: Array(trace.suffix(40)), faults: faults,
                       digest: options.digest ? redis.digest : nil, events: redis.events)
    }

    /// Moves virtual time, every timer at its own time, and takes what members were sent.
    func advance(_ nanoseconds: UInt64) {
        loop.advance(to: loop.now + nanoseconds)
        let before = checker.broken.count
        for member in members { member.take(&checker) }
        if checker.broken.count > before, let first = checker.broken.dropFirst(before).first { note("broken: \(first)") }
    }

    func broke(_ invariant: String, _ detail: String) { checker.broke(invariant, detail) }

    private func note(_ text: String) {
        trace.append("\((loop.now - Self.start) / 1_000_000) ms: \(text)")
        redis.log("— \(text)")
    }

    /// Nodes a member may act on: up, not paused.
    private var activeNodes: [Int] { servers.indices.filter { servers[$0] != nil && pausedUntil[$0] <= loop.now } }

    /// Whether a node reaches Redis (a presenter there takes control through it, not alone).
    private func shares(_ node: Int) -> Bool { servers[node]?.engine?.isAvailable == true }

    private func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[random.below(items.count)] }

    private var actingMembers: [SimMember] {
        members.filter { $0.alive && $0.welcomed && !$0.closed && pausedUntil[$0.node] <= loop.now && servers[$0.node] != nil }
    }

    private func step() {
        let roll = random.below(100)
        let presenters = actingMembers.filter { $0.role == .presenter }
        switch roll {
        case 0..<14:
            guard let node = pick(activeNodes.filter(shares)) else { return }
            join(random.chance(0.5) ? .presenter : .follower, on: node)
        case 14..<52:
            guard let member = pick(presenters) else { return }
            scroll(member)
        case 52..<62:
            guard let member = pick(presenters.filter { shares($0.node) }) else { return }
            send(#"{"type":"control","action":"take"}"#, from: member, "take")
            if random.chance(0.5) { scroll(member) }  // a scroll right after the take
        case 62..<65:
            guard let member = pick(presenters.filter { $0.driver == $0.id && shares($0.node) }) else { return }
            send(#"{"type":"control","action":"release"}"#, from: member, "release")
        case 65..<69:
            guard let member = pick(presenters) else { return }
            let text = "doc \(random.below(1000))"
            send(#"{"type":"document","name":"d","format":"text","text":"\#(text)"}"#, from: member, "document '\(text)'")
        case 69..<74:
            guard let member = pick(actingMembers) else { return }
            leave(member)
        case 74..<78 where options.faults:
            fault()
        default:
            let pause = random.next(in: 0...400_000_000)
            note("time passes (\(pause / 1_000_000) ms)")
            advance(pause)
        }
    }

    func join(_ role: Role, on node: Int) {
        let (parameters, followKey) = access(for: role)
        connect(role, on: node, parameters: parameters, followKey: followKey)
    }

    /// A follower who joins after quiescence, with the room's follow key (if any).
    func joinLate(on node: Int, followKey: String?) -> SimMember? {
        connect(.follower, on: node, parameters: followKey.map { ["followKey=\($0)"] } ?? [], followKey: followKey, late: true)
    }

    /// A join with the query parameters given (a directed test's: no draw from the schedule).
    @discardableResult
    func join(_ role: Role, on node: Int, parameters: [String], followKey: String? = nil) -> SimMember? {
        connect(role, on: node, parameters: parameters, followKey: followKey)
    }

    @discardableResult
    private func connect(_ role: Role, on node: Int, parameters: [String], followKey: String?, late: Bool = false) -> SimMember? {
        guard let server = servers[node] else { return nil }
        joins += 1
        let name = (role == .presenter ? "P" : "F") + "\(joins)@\(node)"
        let query = (role == .presenter ? ["role=presenter", "name=\(name)"] : []) + parameters
        let path = "/rooms/\(Self.room)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        let given = followKey.map { " with follow key \($0)" } ?? (options.followKeys && role == .follower ? " without a follow key" : "")
        guard let client = try? InProcessClient(server, loop: loop, path: path, from: "10.0.\(node).\(joins % 250 + 1)") else {
            checker.broke("I0", "\(name) could not connect")
            return nil
        }
        guard client.upgraded else {
            if late { checker.broke("I6", "\(name)\(given) was refused after quiescence: \(client.status)") }
            note("\(name)\(given) refused: \(client.status)")
            return nil
        }
        note("\(name) joins\(given)")
        let member = SimMember(client: client, node: node, role: role, name: name, followKey: followKey)
        if SimRedis.logs || options.digest { member.heard = { [redis] text in redis.log(text) } }
        members.append(member)
        return member
    }

    func leave(_ member: SimMember) {
        note("\(member.name) leaves")
        member.alive = false
        member.client.connection.hangUp()
    }

    func scroll(_ member: SimMember) {
        offset += 1 + random.below(40)
        send(#"{"type":"scroll","offset":\#(offset),"viewport":10,"content":100000}"#, from: member, "scroll \(offset)")
    }

    func send(_ json: String, from member: SimMember, _ what: String) {
        note("\(member.name) \(what)")
        member.client.send(json)
    }

    // MARK: Faults

    private func fault() {
        guard let node = pick(servers.indices.filter { servers[$0] != nil }) else { return }
        faults += 1
        switch random.below(options.redisStops ? 5 : 4) {
        case 0:
            dropConnections(of: node)
        case 1:
            pause(node, for: random.next(in: 500_000_000...7_000_000_000))
        case 2:
            crash(node)
        case 4:
            let stop = random.next(in: 1_000_000_000...9_000_000_000)
            note("redis stops for \(stop / 1_000_000) ms")
            redis.freeze(for: stop)
        default:
            note("redis restarts empty")
            redis.restartEmpty()
        }
    }

    /// `node`'s links to Redis drop (a `CLIENT KILL`, a network fault): it serves its rooms alone
    /// and reconnects every 0.5 s.
    func dropConnections(of node: Int) {
        note("node \(node) loses its Redis connections")
        for link in redis.links where link.node == node && link.isReady { link.drop("killed") }
    }

    /// `node` stops (SIGSTOP) for `nanoseconds`: its members and its links to Redis are frozen.
    func pause(_ node: Int, for nanoseconds: UInt64) {
        note("node \(node) pauses for \(nanoseconds / 1_000_000) ms")
        pausedUntil[node] = loop.now + nanoseconds
        for link in redis.links where link.node == node { link.frozenUntil = loop.now + nanoseconds }
    }

    /// `node` dies (its members' connections and its links to Redis with it); a new node starts.
    func crash(_ node: Int) {
        note("node \(node) crashes; a new node \(servers.count) starts")
        for link in redis.links where link.node == node { link.stop() }
        for member in members where member.node == node && member.alive {
            member.alive = false
            member.client.connection.hangUp()
        }
        servers[node]?.shutdown()
        servers[node] = nil
        try? addNode()
    }

    // MARK: Quiescence

    /// No input and no fault for long enough that a lease left by a crashed driver expires and
    /// is inherited (10 s): then every member holds the same state, driver and document (I2),
    /// and a follower who joins on any node (with the room's follow key) gets exactly that in
    /// its welcome (I6); every node holds the room's follow key, and no follower without it is
    /// still a member (I7).
    func quiesce() {
        note("quiescence")
        advance(10_000_000_000)
        let holders = members.filter { $0.alive && $0.welcomed && !$0.closed }
        let key = openingFollowKey
        let late = servers.indices.filter { servers[$0] != nil }.compactMap { joinLate(on: $0, followKey: key) }
        advance(1_000_000_000)
        for member in late where !member.welcomed { checker.broke("I6", "\(member.name) got no welcome within 1 s") }
        if options.followKeys { checkFollowKeys() }
        let all = holders + late.filter(\.welcomed)
        guard let reference = all.first else { return }
        for member in all.dropFirst() {
            let invariant = late.contains { $0 === member } ? "I6" : "I2"
            if member.state != reference.state {
                checker.broke(invariant, "\(member.name) holds \(describe(member.state)), \(reference.name) \(describe(reference.state))")
            }
            if member.driver != reference.driver {
                checker.broke(invariant, "\(member.name)'s driver is \(member.driver ?? "none"), \(reference.name)'s \(reference.driver ?? "none")")
            }
            if member.document != reference.document {
                checker.broke(invariant, "\(member.name)'s document is \(member.document ?? "none"), \(reference.name)'s \(reference.document ?? "none")")
            }
        }
    }

    private func describe(_ state: ScrollState?) -> String {
        state.map { "seq \($0.seq) offset \(Int($0.offset)) by …\($0.by.suffix(4))" } ?? "no state"
    }
}
