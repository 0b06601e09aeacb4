package import Access
import CLinux
package import Cluster
import CoreMetrics
import Hub
import Logging
import Operations
package import RedisClient
package import RoomKit
import ScrollModel
import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// A running ScrollSync server: event loops, listeners, endpoints.
public final class Server: Sendable {
    public let configuration: ServerConfiguration
    /// The port actually bound (useful with port 0).
    public let port: Int
    /// The rooms this server holds.
    public let hub: LocalRoomHub
    public let counters = ServerCounters()
    /// The metrics `/metrics` shows, read when asked.
    let metrics: ServerMetrics
    private let group: EventLoopGroup

    public let logger: Logger
    /// Where rooms are kept across restarts (nil: in memory only).
    let store: (any RoomStore)?
    /// Shares rooms with other nodes, when Redis is configured.
    package let engine: (any RoomEngine)?
    /// The Redis servers rooms are shared through now (`redis.url`, then `redis.shards`, or a
    /// cluster's masters); empty for a single process.
    package var redisShards: [RedisRoomEngine] { RedisShardList(engine: engine).current }
    /// Makes the handler of each new connection.
    private let makePeer: @Sendable (Channel) -> any ChannelHandler
    /// What a reload may change (`reload`): the certificate, the admin token, the origins and
    /// connection limits the router checks, and the configuration they came from.
    let tls: TLSContext?
    let adminToken: Reloadable<String?>
    let router: Router
    let current: Reloadable<ServerConfiguration>
    /// Lays out recordings' player pages off the loops, apart from the key checks (tests fill it).
    package let pages = RecordingEndpoint.pageWorker()
    /// Hashes presenter keys off the loops (tests fill its worker).
    package var keyHasher: KeyHasher { hub.keys.hasher }

    /// Binds and starts serving. Rooms kept in `configuration.dataDirectory` come back.
    ///
    /// With `embedded` (`EventLoop.embedded()`), nothing listens and no thread starts: the
    /// server runs on that loop as its caller steps it, and `connectEmbedded()` gives it
    /// in-process connections (the tests' harness).
    public convenience init(configuration: ServerConfiguration, logger: Logger = Logger(label: "scrollsync"), embedded: EventLoop? = nil) throws {
        try self.init(configuration: configuration, logger: logger, embedded: embedded, redisLinks: nil)
    }

    /// The same, with Redis reached through `redisLinks` (a test's simulated Redis) instead of
    /// connections to `configuration.redisURL` (which must still be set), and its session ids
    /// (its members' and its node id) drawn from `sessionIDs` (the cluster simulation's, seeded).
    init(configuration: ServerConfiguration, logger: Logger, embedded: EventLoop?, redisLinks: RedisLinkFactory?,
         sessionIDs: SessionIDSource = .process) throws {
        self.configuration = configuration
        current = Reloadable(configuration)
        self.logger = logger
        var tls: TLSContext?
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            tls = try TLSContext(certificateChainFile: certificate, privateKeyFile: key, ciphers: configuration.tlsCiphers)
            logger.info("TLS certificate loaded", metadata: ["certificate": "\(certificate)"])
        }
        var redis = [RedisEndpoint]()
        if let url = configuration.redisURL {
            for (key, url) in [("redis.url", url)] + configuration.redisShards.map({ ("redis.shards", $0) }) {
                var endpoint: RedisEndpoint
                do {
                    endpoint = try RedisEndpoint(url: url)
                } catch {
                    throw ConfigurationError("\(key): \(error)")
                }
                if let password = configuration.redisPassword { endpoint.password = password }
                endpoint.caFile = configuration.redisCAFile
                redis.append(endpoint)
            }
        }
        store = !redis.isEmpty ? nil : try configuration.dataDirectory.map { directory throws(StoreError) in try FileRoomStore(directory: directory, logger: logger) }
        // Every connection it may hold, and some for listeners, Redis, the store and recordings.
        if embedded == nil { DescriptorTable.reserve(configuration.limits.connections + 1024) }
        let group = try embedded.map { EventLoopGroup(loops: [$0]) } ?? EventLoopGroup(count: configuration.loops ?? EventLoopGroup.coreCount)
        self.group = group
        let roomOptions = LocalRoomHub.Options(configuration)
        let messageLimits = roomOptions.messageLimits
        let engine = Self.roomEngine(redis, cluster: configuration.redisCluster, loop: group.loops[0], roomIdleSeconds: roomOptions.roomIdleSeconds,
                                     limits: messageLimits, secret: configuration.redisSecret, logger: logger, links: redisLinks,
                                     ids: sessionIDs)
        self.engine = engine
        let shards = RedisShardList(engine: engine)
        hub = try LocalRoomHub(loops: group.loops, options: roomOptions, store: store, engine: engine, recordingsDirectory: store == nil ? nil : configuration.dataDirectory.map { $0 + "/recordings" },
                               refusals: counters.refusalReasons, logger: logger)
        let counters = counters
        let messageBudget = MessageBudget(limit: configuration.limits.unfinishedMessageBytes)
        Self.mapLargeBuffers()
        var rooms = RoomEndpoint(hub: hub, limits: configuration.roomLimits, messageLimits: messageLimits,
                                 scrollRate: configuration.limits.scrollRate, scrollBurst: configuration.limits.scrollBurst,
                                 documentsPerMinute: configuration.limits.documentsPerMinute, documentBurst: configuration.limits.documentBurst,
                                 messagesPerSecond: configuration.limits.inboundMessages.rate, messageBurst: configuration.limits.inboundMessages.burst,
                                 counters: counters, ids: sessionIDs)
        rooms.tokens = configuration.authSecret.map(TokenVerifier.init(secret:))
        rooms.tokenRequired = configuration.authRequired
        var endpoints: [any WebSocketEndpoint] = [rooms]
        if configuration.echoEnabled { endpoints.append(EchoEndpoint(limits: configuration.echoLimits)) }
        let metrics = ServerMetrics(counters: counters, hub: hub, loops: group.loops, redis: shards, messageBudget: messageBudget, store: store)
        self.metrics = metrics
        let adminToken = Reloadable(configuration.adminToken)
        self.adminToken = adminToken
        self.tls = tls
        let tty = TTYEndpoint(hub: hub, rooms: rooms, total: configuration.limits.ttyReaders, perAddress: configuration.limits.ttyReadersPerAddress,
                              grouping: AddressGrouping(ipv6PrefixLength: configuration.limits.ipv6PrefixLength), secure: tls != nil,
                              refusals: counters.refusalReasons)
        let httpEndpoints: [any HTTPEndpoint] = [
            HealthEndpoint(redis: shards, store: store, recordings: hub.recordingFiles),
            MetricsEndpoint(metrics: metrics, adminToken: adminToken),
            RoomsEndpoint(hub: hub, adminToken: adminToken),
            RecordingEndpoint(hub: hub, adminToken: adminToken, pages: pages),
            ViewerEndpoint(hub: hub, rooms: rooms, tty: tty),
        ]
        // Sockets are accepted with a room's send buffer, as most are rooms' (no setsockopt per join).
        let acceptedSendBuffer = embedded != nil ? nil : RoomEndpoint.sendBuffer
        let router = Router(configuration: configuration, endpoints: endpoints, httpEndpoints: httpEndpoints, loops: group.loops.count,
                            acceptedSendBuffer: acceptedSendBuffer, counters: counters, messageBudget: messageBudget, logger: logger, tty: tty)
        self.router = router
        group.loops[0].onTick { Self.returnFreedMemory(messageBudget) }
        // An application that bootstrapped swift-metrics gets the metrics in its backend.
        if MetricsBridge.backendBootstrapped {
            let bridge = MetricsBridge(snapshot: metrics.snapshot, factory: MetricsSystem.factory)
            group.loops[0].onTick { bridge.report() }
        }
        let makePeer: @Sendable (Channel) -> any ChannelHandler = { channel in WebSocketPeer(channel: channel, router: router) }
        self.makePeer = makePeer
        port = embedded != nil ? 0 : try group.listen(host: configuration.host, port: configuration.port, tls: tls,
                                                      acceptedSendBuffer: acceptedSendBuffer, makeHandler: makePeer)
        hub.publicURL.set(url)  // the port bound (port 0 picks one), before anyone can ask for a recording
        if embedded == nil { group.start() }
        if let first = shards.current.first {
            logger.info(configuration.redisCluster ? "sharing rooms through a Redis Cluster" : "sharing rooms through Redis", metadata: [
                "redis": "\(redis.map { "\($0)" }.joined(separator: ","))", "node": "\(first.node)",
                "signed": "\(configuration.redisSecret != nil)",
            ])
            (engine as? ShardedRoomEngine)?.start()
            (engine as? RedisRoomEngine)?.start()
        }
        // What the configuration leaves open, once, with the port it got (0 picks one).
        var listening = configuration
        listening.port = port
        for warning in ConfigurationWarnings.of(listening) { logger.warning("\(warning)") }
    }

    /// The engine that shares rooms through `redis` (nil: none): one Redis, several by a hash
    /// of the room, or a cluster's masters found from the first (every shard on `loop`, one
    /// node id for all).
    static func roomEngine(_ redis: [RedisEndpoint], cluster: Bool, loop: EventLoop, roomIdleSeconds: Int,
                           limits: ClientMessage.Limits, secret: String? = nil, logger: Logger,
                           links: RedisLinkFactory? = nil, ids: SessionIDSource = .process) -> (any RoomEngine)? {
        guard !redis.isEmpty else { return nil }
        let node = ids.make().description
        let counters = cluster ? EngineCounters() : nil
        let make = { (endpoint: RedisEndpoint) in
            RedisRoomEngine(endpoint: endpoint, loop: loop, roomIdleSeconds: roomIdleSeconds, limits: limits, logger: logger,
                            sharded: cluster, node: node, counters: counters, secret: secret, links: links)
        }
        if cluster { return ShardedRoomEngine(cluster: redis, loop: loop, logger: logger, makeShard: make) }
        return redis.count > 1 ? ShardedRoomEngine(shards: redis.map(make)) : make(redis[0])
    }

    /// Buffers of 256 KiB or more (messages being received, documents, their frames) get
    /// memory of their own from the kernel, which goes back to it when they are freed, and
    /// grow by `mremap` instead of copy and free. glibc's default raises this threshold after
    /// the first such buffer is freed, after which large buffers come from the heap and their
    /// freed memory stays in the process (a burst of large messages would keep its peak for good).
    private static func mapLargeBuffers() {
        _ = mallopt(M_MMAP_THRESHOLD, 256 << 10)
    }

    /// After a large release (unfinished messages dropped, a few MiB or more), malloc's free
    /// memory goes back to the system: glibc keeps freed blocks in its arenas otherwise, so
    /// that a burst of large messages would leave the process's RSS high for good.
    private static func returnFreedMemory(_ budget: MessageBudget) {
        if budget.takeReleased() >= 4 << 20 { malloc_trim(0) }
    }

    /// The URL clients use, e.g. `ws://127.0.0.1:8080`.
    public var url: String {
        let scheme = configuration.tlsCertificateFile == nil ? "ws" : "wss"
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(scheme)://\(host):\(port)"
    }

    /// An in-process connection from `address` to a server on an embedded loop.
    /// With a certificate configured, it speaks TLS as an accepted socket would.
    public func connectEmbedded(from address: String = "127.0.0.1") -> EmbeddedConnection {
        // Only SSL_new can fail here (out of memory): a test harness may stop on that.
        try! group.loops[0].connectEmbedded(peerAddress: address, tls: tls, makeHandler: makePeer)
    }

    /// A bridge of the server's metrics to `factory` (the server makes one to the bootstrapped
    /// `MetricsSystem` itself): each `report()` passes every counter and gauge of `/metrics` on.
    func metricsBridge(to factory: MetricsFactory) -> MetricsBridge {
        MetricsBridge(snapshot: metrics.snapshot, factory: factory)
    }

    /// Stops the loops and drops every connection.
    public func shutdown() {
        group.shutdown()
        stopWorkers()
    }

    /// The store, recordings and the threads of slow work, once the loops have stopped.
    private func stopWorkers() {
        store?.close()
        hub.recordingFiles?.close()
        hub.screenRenderer.stop()
        pages.stop()
        hub.keys.hasher.worker.stop()
    }

    /// Stops accepting, sends every client close 1001 ("going away"), and waits for the
    /// connections to finish closing, at most `grace` seconds; then stops the loops.
    /// `interrupted` is polled while waiting: when it answers true, stop at once.
    /// Returns true when every connection closed within the grace period.
    @discardableResult
    public func shutdownGracefully(grace: Double, interrupted: () -> Bool = { false }) -> Bool {
        group.beginShutdown()
        let deadline = monotonicNanoseconds() + UInt64(grace * 1e9)
        var drained = false
        while monotonicNanoseconds() < deadline && !interrupted() {
            if counters.connectionsOpen.load(ordering: .relaxed) == 0 { drained = true; break }
            usleep(20_000)
        }
        group.shutdown()
        stopWorkers()
        return drained
    }
}
