import Access
import Logging
import RedisClient
import RoomKit
import ScrollModel
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Rooms shared between nodes through Redis.
///
/// Per room (keys share the hash tag `{room}`, so Redis Cluster keeps them on one slot):
/// - `scrollsync:{R}` hash: `seq`, `ver` (one more per change), `suf` (the newest state's
///   JSON after `"seq":`), `doc` (the `document` message), `key` (presenter key digest),
///   `driver`, `dname`;
/// - `scrollsync:{R}:lease`: the driving session, with a 5 s expiry renewed every second;
/// - `scrollsync:{R}:nodes` hash: each node's member counts and when it said them.
///
/// The lease holder's node orders its driver's states and publishes `S MESSAGE` with `HSET`
/// of `seq`/`suf` (`publish(led:seq:by:room:keep:)`, no script). Every other change runs as one Lua script
/// that checks, assigns `seq`/`ver`, stores and publishes `VER MESSAGE` on channel
/// `scrollsync:{R}`. Each node decodes what it reads once and sends its own encoding to its
/// members. Presence goes out as `P NODE p f d`.
/// Two connections on one loop (commands, and a subscriber), both `RedisConnection`s. A node
/// subscribes to the channels of the rooms it holds only (subscribed before a room's snapshot
/// is read, so no change falls between), so it never hears rooms it does not serve. On a Redis
/// Cluster (`sharded`), channels are sharded (`SSUBSCRIBE`/`SPUBLISH`): a room's messages stay
/// on the master that serves its slot.
public final class RedisRoomEngine: RoomEngine, @unchecked Sendable {
    public let node: String
    public let loop: EventLoop
    public let endpoint: RedisEndpoint
    /// Sharded pub/sub (a Redis Cluster master): `SPUBLISH`/`SSUBSCRIBE`, in scripts too.
    public let sharded: Bool
    public weak var delegate: (any SharedRoomsDelegate)?
    /// Milliseconds a driver's lease lasts without renewal.
    public let leaseMilliseconds = 5000
    /// Milliseconds Redis keeps a room nobody touches.
    package let roomIdleMilliseconds: Int
    package let commands: any RedisLink
    private let subscriber: any RedisLink
    private let available = Atomic<Bool>(false)
    /// Rooms whose snapshot (a fetch or a merge) is on its way, and the changes heard meanwhile.
    package var attaching: [String: SnapshotWait] = [:]
    /// Rooms whose control change is being confirmed, and the changes heard meanwhile, in order
    /// (`change` nil: a node's `Q`).
    package var confirming: [String: [(version: Int?, change: SharedChange?)]] = [:]
    package let logger: Logger
    package let counters: EngineCounters
    /// Signs what this node publishes and checks what it reads (`redis.secret`), if set.
    package let signer: ChannelSigner?
    /// When a refusal was last logged, and how many were not since.
    package var refusalLoggedAt: UInt64?
    package var refusalsUnlogged = 0
    /// How this engine publishes, and its scripts (with `SPUBLISH` when sharded).
    let publishCommand: String
    let scripts: Scripts.Set

    public var isAvailable: Bool { available.load(ordering: .acquiring) }
    /// Why Redis is unavailable, if it is (loop thread).
    public var lastError: String? { commands.lastError ?? subscriber.lastError }
    public var statistics: EngineCounters { counters }
    /// Hears that Redis Cluster moved a slot (a redirection, or a channel the server
    /// unsubscribed): the cluster's map is due for a refresh (loop thread).
    public var onRedirect: (_ channel: String?) -> Void = { _ in }

    package static let channelPrefix = "scrollsync:{"

    /// What a node writes to Redis goes out at most this long after it is sent (1 ms): many
    /// rooms' states in one write cost Redis far less than one write each (BENCHMARKS.md,
    /// many rooms through Redis), at half a millisecond more for followers on other nodes.
    package static let corkNanoseconds: UInt64 = 1_000_000

    /// What a change read from Redis may hold (the same limits as a client's messages).
    package let limits: ClientMessage.Limits

    /// `node` names this node on every shard; `counters` may be shared by several engines
    /// (a cluster's masters come and go, its counts stay). `links` makes its two links to
    /// Redis (nil: `RedisConnection`s to `endpoint`; a test's simulated Redis otherwise).
    public init(endpoint: RedisEndpoint, loop: EventLoop, roomIdleSeconds: Int, limits: ClientMessage.Limits = .init(), logger: Logger,
                sharded: Bool = false, node: String? = nil, counters: EngineCounters? = nil, secret: String? = nil,
                links: RedisLinkFactory? = nil) {
        self.endpoint = endpoint
        signer = secret.map(ChannelSigner.init(secret:))
        self.sharded = sharded
        self.counters = counters ?? EngineCounters()
        publishCommand = sharded ? "SPUBLISH" : "PUBLISH"
        scripts = sharded ? .sharded : .plain
        self.limits = limits
        self.loop = loop
        self.logger = logger
        roomIdleMilliseconds = max(60, roomIdleSeconds) * 1000
        self.node = node ?? SessionID.make().description
        let link = links ?? { role, cork in RedisConnection(endpoint: endpoint, loop: loop, role: role, corkNanoseconds: cork) }
        commands = link(.commands, Self.corkNanoseconds)
        var onMessage: ((ArraySlice<UInt8>, [UInt8]) -> Void)?
        subscriber = link(.subscriber(sharded: sharded) { channel, payload in onMessage?(channel[...], payload) }, nil)
        onMessage = { [unowned self] channel, payload in received(channel: channel, payload: payload) }
        commands.onStatus = { [unowned self] _ in statusChanged() }
        commands.onRedirect = { [unowned self] channel in onRedirect(channel) }
        subscriber.onRedirect = { [unowned self] channel in onRedirect(channel) }
        subscriber.onStatus = { [unowned self] _ in statusChanged() }
        loop.onTick { [weak self] in self?.warnWhileUnavailable() }
    }

    /// When the warning that Redis is unavailable was last logged (loop time).
    private var warnedAt: UInt64?

    /// While Redis cannot be reached (from the start, or for long), says so once a minute.
    private func warnWhileUnavailable() {
        guard !isAvailable, !stopped, lastError != nil else { return }
        if let warnedAt, loop.now - warnedAt < 60_000_000_000 { return }
        warnedAt = loop.now
        logger.warning("redis unavailable; serving rooms held here", metadata: ["redis": "\(endpoint)", "error": "\(lastError ?? "")"])
    }

    /// Connects; call once the delegate is set.
    public func start() {
        loop.execute { [self] in
            commands.start()
            subscriber.start()
        }
    }

    /// Disconnects for good (the server stops, or a cluster's map no longer names this master):
    /// no outage is counted or logged for it.
    public func stop() {
        loop.execute { [self] in
            stopped = true
            commands.stop()
            subscriber.stop()
        }
    }

    /// Stopped on purpose (loop thread).
    private var stopped = false

    private func statusChanged() {
        let up = commands.isReady && subscriber.isReady && !stopped
        guard up != available.load(ordering: .relaxed) else { return }
        available.store(up, ordering: .releasing)
        if stopped {
            delegate?.sharedAvailability(false)
            return
        }
        if up {
            logger.info("redis connected", metadata: ["redis": "\(endpoint)", "node": "\(node)"])
        } else {
            counters.outages.add(1, ordering: .relaxed)
            warnedAt = loop.now
            logger.warning("redis unavailable; serving rooms held here", metadata: ["redis": "\(endpoint)", "error": "\(lastError ?? "")"])
        }
        delegate?.sharedAvailability(up)
    }

    // MARK: Keys

    /// A room's hash key and channel; its other keys start with it (the `{room}` hash tag keeps
    /// them on one Redis Cluster slot).
    package static func roomKey(_ room: String) -> String { channelPrefix + room + "}" }

    package func keys(_ room: String) -> (hash: String, lease: String, nodes: String, channel: String) {
        let base = Self.roomKey(room)
        return (base, base + ":lease", base + ":nodes", base)
    }

    // MARK: RoomEngine

    public func attach(room: String, reply: @escaping @Sendable (RoomSnapshot?) -> Void) {
        loop.execute { [self] in
            guard isAvailable else { return reply(nil) }
            subscribe(room) { [self] subscribed in
                guard subscribed else { return reply(nil) }
                fetch(room, reply: reply)
            }
        }
    }

    /// Subscribes to `room`'s channel; `then` hears whether it is (a room's changes are heard
    /// from before its snapshot is read, so none falls between).
    func subscribe(_ room: String, then: @escaping (Bool) -> Void) {
        guard isAvailable else { return then(false) }
        subscriber.subscribe(keys(room).channel, confirmed: then)
    }

    /// Sends one command on this engine's connection (loop thread), as the cluster's map is read.
    package func command(_ arguments: [String], reply: @escaping (RedisReply) -> Void) {
        commands.send(arguments, reply: reply)
    }

    /// This node no longer holds `room`: it stops hearing its channel.
    public func detach(room: String) {
        loop.execute { [self] in
            hashRenewals.forget(room)
            subscriber.unsubscribe(keys(room).channel)
        }
    }

    private func fetch(_ room: String, reply: @escaping @Sendable (RoomSnapshot?) -> Void) {
        let k = keys(room)
        attaching[room, default: SnapshotWait()].asked()
        commands.send(["EVAL", scripts.snapshot, "3", k.hash, k.lease, k.nodes, String(seqClock()), String(roomIdleMilliseconds)]) { [self] answer in
            let snapshot = answer.isError ? nil : snapshotFrom(answer, room: room)
            // A driven room's newest state may not be in its hash yet (written back every
            // 250 ms): the nodes that hold the room answer the question below, and the
            // welcome waits for the first answer (a round trip), at most 50 ms.
            guard let snapshot, let driver = snapshot.driver else { return answered(room, snapshot, reply) }
            // (The answer may overtake the snapshot.)
            if attaching[room]?.heardLed(by: driver) == true { return answered(room, snapshot, reply) }
            settle(room)  // a fetch of the same room still waiting answers first
            newestWanted[room] = (snapshot, reply)
            loop.schedule(after: Self.newestWaitNanoseconds) { [weak self] in self?.settle(room) }
        }
        askNewest(channel: k.channel)
    }

    public func scroll(room: String, session: String, suffix: [UInt8], seq: Int, done: @escaping @Sendable (EngineResult) -> Void) {
        loop.execute { [self] in
            counters.scriptedChanges.add(1, ordering: .relaxed)
            let k = keys(room)
            let arguments: [[UInt8]] = ["EVAL", scripts.scroll, "2", k.hash, k.lease, session].map { Array($0.utf8) }
                + [suffix, Array(k.channel.utf8), scriptKey(statePrefix + suffix, channel: k.channel), Array(String(seq).utf8)]
            commands.send(arguments) { answer in
                switch answer {
                // redis-server 7 says `ERR NOTDRIVER` (a script's error without a code gets ERR).
                case .error(let message) where message.hasPrefix("NOTDRIVER") || message.hasPrefix("ERR NOTDRIVER"):
                    done(.refused(ProtocolError(.notDriver, "another presenter took control; this scroll was dropped")))
                case .error: done(.unavailable)
                default: done(.done)
                }
            }
        }
    }

    /// `PUBLISH` of `S MESSAGE` at once; `seq` and `suf` written into the hash (for nodes that
    /// fetch the room) once the room rests, or at most every second while it moves, the newest
    /// state only (`WriteBackQueue`), and only above the hash's `seq` while `by` holds the lease
    /// (`Scripts.writeBack`).
    public func publish(led message: [UInt8], seq: Int, by: String, room: String, keep: Bool) {
        loop.execute { [self] in
            guard isAvailable else { return }
            counters.ledStates.add(1, ordering: .relaxed)
            let channel = keys(room).channel
            commands.send([Array(publishCommand.utf8), Array(channel.utf8), signed(Array("S ".utf8) + message, channel: channel)])
            guard keep else { return }
            unwritten.record(room: room, seq: seq, by: by, message: message, now: loop.now)
            scheduleWriteBack()
        }
    }

    /// Led states not yet in their rooms' hashes, and when each is due (loop-confined;
    /// `RedisRoomEngine+WriteBack.swift`).
    var unwritten = WriteBackQueue()
    /// When each driven room's hash had its idle time renewed last (loop-confined): a `PEXPIRE`
    /// a second per room was one in 26 of Redis's commands at 20 updates a second.
    var hashRenewals = RenewalTimes()

    /// A new hash's `seq` base (`Scripts.snapshot`): the wall clock in microseconds since
    /// 2026-01-01, some 3·10¹³ a year, far faster than a room numbers states, and below the
    /// 10¹⁵ clients read until 2057. The simulation sets its virtual clock before it starts.
    package var seqClock: @Sendable () -> Int = RedisRoomEngine.wallSeqClock
    /// The wall clock in ms since 1970 (a node's presence counts in Redis and their age): the
    /// simulation's virtual time there.
    package var wallClock: @Sendable () -> Int = { wallMilliseconds() }
    package static let wallSeqClock: @Sendable () -> Int = { wallMicroseconds() - 1_767_225_600_000_000 }
    public var seqNow: Int { seqClock() }

    public func control(room: String, _ action: ControlAction, done: @escaping @Sendable (EngineResult) -> Void) {
        let mode: String, session: String, name: String?, stale: String
        switch action {
        case .renew: return renew(room: room, done: done)
        case .take(let id, let named): (mode, session, name, stale) = ("take", id, named, "")
        case .claim(let id, let named): (mode, session, name, stale) = ("claim", id, named, "")
        case .inherit(let id, let named, let previous): (mode, session, name, stale) = ("inherit", id, named, previous)
        case .release(let id): (mode, session, name, stale) = ("release", id, nil, "")
        case .lapse(let previous): (mode, session, name, stale) = ("lapse", "", nil, previous)
        }
        let lost = mode == "take" || mode == "claim" ? "another presenter holds control" : "you do not drive this room"
        loop.execute { [self] in
            let k = keys(room)
            let run = { [self] in
                // The room's newest led state goes into its hash before control changes: what a
                // node fetches after a release or hand-over is the driver's last.
                writeBack(room: room)
                let message = mode == "release" || mode == "lapse" ? ServerMessage.driver(nil, name: nil) : ServerMessage.driver(session, name: name)
                counters.scriptedChanges.add(1, ordering: .relaxed)
                commands.send(["EVAL", scripts.control, "2", k.hash, k.lease, mode, session, name ?? "", stale, String(leaseMilliseconds),
                               String(roomIdleMilliseconds), k.channel].map { Array($0.utf8) } + [message, scriptKey(message, channel: k.channel)]) { answer in
                    switch answer {
                    case .error: done(.unavailable)
                    case .integer(0): done(.refused(ProtocolError(.notDriver, lost)))
                    case .integer(let version): done(.ordered(version: version))
                    default: done(.done)
                    }
                }
            }
            // `inherit` (every second) and `lapse` (every 5 s) run for each room driven from
            // another node and nearly always find its lease alive: a plain `EXISTS` first, a
            // fraction of a script's cost in Redis; the script only once the lease is gone.
            guard mode == "inherit" || mode == "lapse" else { return run() }
            commands.send(["EXISTS", k.lease]) { answer in
                switch answer {
                case .error: done(.unavailable)
                case .integer(1): done(.refused(ProtocolError(.notDriver, lost)))
                default: run()
                }
            }
        }
    }

    /// Keeps the lease and the room's hash alive: plain `PEXPIRE`s (the holder's node does this
    /// every second for each room it drives, so no script), the hash's only every eighth of its
    /// idle time (`hashRenewals`). Without a check of the holder: in the moment after another
    /// node took the lease, this extends the new holder's, which that node renews itself anyway.
    private func renew(room: String, done: @escaping @Sendable (EngineResult) -> Void) {
        loop.execute { [self] in
            let k = keys(room)
            if hashRenewals.isDue(room, now: loop.now, every: UInt64(roomIdleMilliseconds) * 1_000_000 / 8) {
                commands.send(["PEXPIRE", k.hash, String(roomIdleMilliseconds)])
            }
            commands.send(["PEXPIRE", k.lease, String(leaseMilliseconds)]) { answer in
                switch answer {
                case .error: done(.unavailable)
                case .integer(0): done(.refused(ProtocolError(.notDriver, "the lease is gone")))
                default: done(.done)
                }
            }
        }
    }

    public func share(document message: [UInt8], room: String, done: @escaping @Sendable (EngineResult) -> Void) {
        loop.execute { [self] in
            let k = keys(room)
            counters.scriptedChanges.add(1, ordering: .relaxed)
            commands.send(["EVAL", scripts.setAndPublish, "1", k.hash, "doc"].map { Array($0.utf8) }
                          + [message, message, Array(k.channel.utf8), Array(String(roomIdleMilliseconds).utf8), scriptKey(message, channel: k.channel)]) { answer in
                done(answer.isError ? .unavailable : .done)
            }
        }
    }

    public func setFollowKey(room: String, record: String) {
        loop.execute { [self] in
            let k = keys(room)
            counters.scriptedChanges.add(1, ordering: .relaxed)
            let message: [UInt8] = SharedChange.access(followKey: record)
            commands.send(["EVAL", scripts.setAndPublish, "1", k.hash, "fkey"].map { Array($0.utf8) }
                          + [Array(record.utf8), message, Array(k.channel.utf8), Array(String(roomIdleMilliseconds).utf8), scriptKey(message, channel: k.channel)])
        }
    }

    public func bindKey(room: String, digest: String, reply: @escaping @Sendable (String?) -> Void) {
        loop.execute { [self] in
            let k = keys(room)
            let message = SharedChange.key(record: digest)
            commands.send(["EVAL", scripts.bindKey, "1", k.hash, digest, k.channel].map { Array($0.utf8) }
                          + [message, scriptKey(message, channel: k.channel)]) { [self] answer in
                // The record Redis keeps is checked like every input: one that cannot be read
                // keeps the room locked, never keyless.
                guard !answer.isError else { return reply(digest) }
                guard let kept = answer.text, PresenterKey.isValid(kept) else {
                    refused(SharedInput.Refusal(reason: .snapshot, detail: "the room's key record fails validation"), room: room)
                    return reply(PresenterKey.unreadable)
                }
                reply(kept)
            }
        }
    }

    /// Driven rooms being fetched, waiting for their newest state (see `attach`).
    package var newestWanted: [String: (snapshot: RoomSnapshot, reply: @Sendable (RoomSnapshot?) -> Void)] = [:]

    /// How long a fetch waits for a node's answer with the newest state.
    package static let newestWaitNanoseconds: UInt64 = 50_000_000
}
