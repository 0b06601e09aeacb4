import Logging
import RedisClient
import RoomKit
import ScrollModel
import Transport

extension ShardedRoomEngine {
    /// The masters of the Redis Cluster that `seeds` belong to (any of its nodes; more than one
    /// in case one is down). `makeShard` makes the engine of one master (sharded pub/sub); each
    /// is made when the map first names its master and stopped when no slot is left to it.
    public convenience init(cluster seeds: [RedisEndpoint], loop: EventLoop, logger: Logger,
                            makeShard: @escaping (RedisEndpoint) -> RedisRoomEngine) {
        precondition(!seeds.isEmpty, "a cluster needs a node to ask")
        self.init(shards: [makeShard(seeds[0])])
        routing.withLock { $0.isCluster = true }
        let discovery = ClusterDiscovery(seeds: seeds, loop: loop, logger: logger, makeShard: makeShard)
        discovery.engine = self
        self.discovery = discovery
        for shard in shards { discovery.hearsRedirects(of: shard) }
    }

    /// A new map of the cluster: rooms go to its masters' engines from now on (made and
    /// started for masters not known yet; those no slot is left to are stopped). If any slot
    /// moved to another master, the delegate hears availability again once every master
    /// answers, so every room is reconciled where it now lives.
    package func adopt(_ map: RedisClusterMap, makeShard: (RedisEndpoint) -> RedisRoomEngine, template: RedisEndpoint) {
        let (started, retired, moved) = routing.withLock { routing -> ([RedisRoomEngine], [RedisRoomEngine], Bool) in
            var started = [RedisRoomEngine]()
            let shards = map.masters.map { node in
                if let known = routing.shards.first(where: { $0.endpoint.host == node.host && $0.endpoint.port == node.port }) { return known }
                var endpoint = template
                endpoint.host = node.host
                endpoint.port = node.port
                let shard = makeShard(endpoint)
                started.append(shard)
                return shard
            }
            let retired = routing.shards.filter { old in !shards.contains { $0 === old } }
            let moved = routing.cluster.map { old in
                (0..<RedisClusterMap.slotCount).contains { slot in
                    old.master(ofSlot: slot).map { routing.shards[$0] } !== map.master(ofSlot: slot).map { shards[$0] }
                }
            } ?? true
            routing.shards = shards
            routing.cluster = map
            return (started, retired, moved)
        }
        for shard in started {
            shard.delegate = self
            discovery?.hearsRedirects(of: shard)
            shard.start()
        }
        for shard in retired { shard.stop() }
        if moved { reported.withLock { $0 = false } }
        sharedAvailability(true)  // (the whole is asked again)
    }
}

/// Reads a Redis Cluster's map of slots (`CLUSTER SLOTS`) when it is due: at first, after a
/// redirection (`MOVED`, `ASK`, a channel the server moved), and every half second while a
/// master does not answer (its replica may have taken over). It asks a master that answers,
/// else each configured seed and every node the last map named, in turn. On the engine's loop.
package final class ClusterDiscovery: @unchecked Sendable {
    package weak var engine: ShardedRoomEngine?
    private let loop: EventLoop
    private let logger: Logger
    private let makeShard: (RedisEndpoint) -> RedisRoomEngine
    /// Password, user, TLS and CA of the configured seed, for every node.
    private let template: RedisEndpoint
    private let configured: [RedisClusterMap.Node]
    private var learned: [RedisClusterMap.Node] = []
    /// The connection asked while no master answers, one of `probes` (one per node tried,
    /// kept and reused: a long outage makes no new connection every half second).
    private var probe: RedisConnection?
    private var probes: [RedisClusterMap.Node: RedisConnection] = [:]
    private var probeIndex = 0
    private var running = false
    private var asking = false
    /// A map is wanted (none yet, or a redirection said it is out of date).
    package var due = true

    package static let intervalNanoseconds: UInt64 = 500_000_000

    package init(seeds: [RedisEndpoint], loop: EventLoop, logger: Logger, makeShard: @escaping (RedisEndpoint) -> RedisRoomEngine) {
        template = seeds[0]
        configured = seeds.map { RedisClusterMap.Node(host: $0.host, port: $0.port) }
        self.loop = loop
        self.logger = logger
        self.makeShard = makeShard
    }

    /// A redirection `shard` gets (a slot moved) makes a new map due.
    package func hearsRedirects(of shard: RedisRoomEngine) {
        shard.onRedirect = { [weak self] _ in self?.due = true }
    }

    package func start() {
        loop.execute { [self] in
            running = true
            tick()
        }
    }

    package func stop() {
        loop.execute { [self] in
            running = false
            probe?.stop()
            probe = nil
            probes = [:]
        }
    }

    private func tick() {
        guard running, let engine else { return }
        loop.schedule(after: Self.intervalNanoseconds) { [weak self] in self?.tick() }
        guard !asking, due || !engine.isAvailable else { return }
        if let shard = engine.shards.first(where: \.isAvailable) {
            probe?.stop()
            probe = nil
            return ask(shard.endpoint.host) { shard.command(["CLUSTER", "SLOTS"], reply: $0) }
        }
        // No master answers: a seed, or a node the last map named, in turn.
        if let probe, probe.isReady {
            return ask(probe.endpoint.host) { probe.send(["CLUSTER", "SLOTS"], reply: $0) }
        }
        let nodes = configured + learned.filter { !configured.contains($0) }
        if probe != nil { probeIndex += 1 }
        probe?.stop()
        let node = nodes[probeIndex % nodes.count]
        let next = probes[node] ?? {
            var endpoint = template
            (endpoint.host, endpoint.port) = (node.host, node.port)
            let made = RedisConnection(endpoint: endpoint, loop: loop)
            probes[node] = made
            return made
        }()
        probe = next
        next.start()
    }

    private func ask(_ host: String, _ send: (@escaping (RedisReply) -> Void) -> Void) {
        asking = true
        send { [self] reply in
            asking = false
            guard running, let engine, !reply.isError else { return }
            do {
                let map = try RedisClusterMap(slotsReply: reply, askedHost: host)
                if engine.routing.withLock({ $0.cluster }) != map {
                    logger.info("redis cluster map read", metadata: [
                        "masters": "\(map.masters.map(\.description).joined(separator: ","))", "complete": "\(map.isComplete)",
                    ])
                }
                due = !map.isComplete
                learned = map.masters + map.replicas
                engine.adopt(map, makeShard: makeShard, template: template)
            } catch {
                engine.shards[0].refused(SharedInput.Refusal(reason: .malformed, detail: "\(error)"), room: "(the cluster's map)")
            }
        }
    }
}
