import RedisClient
import RoomKit
import ScrollModel
import Synchronization

/// Rooms spread over several Redis servers by a stable hash of the room's name (as Centrifugo
/// shards its Redis engine): each room lives on one shard, where its changes are ordered, its
/// lease held and its channel published, so capacity grows with the servers. Every node must
/// list the same servers in the same order (`redis.url`, then `redis.shards`). The rooms are
/// shared while every shard answers; when one does not, this node serves its rooms alone and
/// reconciles them when it is back, as with one Redis.
///
/// Or the masters of a Redis Cluster (`redis.cluster`, `ShardedRoomEngine+Cluster.swift`): a
/// room lives on the master that serves its hash slot, with sharded pub/sub; the map of slots
/// is read from the cluster and read again when a master fails or a slot moves.
public final class ShardedRoomEngine: RoomEngine, SharedRoomsDelegate, @unchecked Sendable {
    /// Where rooms go: the shards, and for a cluster which shard serves each slot.
    package struct Routing {
        package var shards: [RedisRoomEngine]
        /// Rooms go by a cluster's map (`cluster`, its masters' engines in its order as
        /// `shards`), not by a hash over `shards`.
        package var isCluster = false
        /// The cluster's map, once read.
        package var cluster: RedisClusterMap?
    }
    package let routing: Mutex<Routing>
    /// The shards rooms go to now.
    public var shards: [RedisRoomEngine] { routing.withLock { $0.shards } }
    public weak var delegate: (any SharedRoomsDelegate)?
    /// What the delegate was last told, so that it hears each change of the whole once.
    package let reported = Mutex<Bool>(false)
    /// A cluster's discovery (nil for shards listed in the configuration).
    package var discovery: ClusterDiscovery?

    public init(shards: [RedisRoomEngine]) {
        precondition(!shards.isEmpty, "a sharded engine needs a shard")
        routing = Mutex(Routing(shards: shards))
        for shard in shards { shard.delegate = self }
    }

    /// The shard that holds `room`: FNV-1a of its name, so every node picks the same one; on a
    /// cluster, the master of the slot of the room's keys (`scrollsync:{ROOM}`).
    public func shard(for room: String) -> RedisRoomEngine {
        routing.withLock { routing in
            if routing.isCluster {
                // A slot nobody serves (between a master's failure and its replica's promotion),
                // or no map yet: the first shard, which refuses or answers MOVED meanwhile.
                let slot = RedisClusterMap.slot(of: RedisRoomEngine.roomKey(room))
                return routing.cluster?.master(ofSlot: slot).map { routing.shards[$0] } ?? routing.shards[0]
            }
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in room.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x100_0000_01b3
            }
            return routing.shards[Int(hash % UInt64(routing.shards.count))]
        }
    }

    /// Whether rooms are shared: every shard answers (and a cluster's every slot has a
    /// master), as found at the last change of a shard or of the map (one atomic load: the
    /// hub asks on every message).
    public var isAvailable: Bool { available.load(ordering: .acquiring) }
    private let available = Atomic<Bool>(false)

    /// The `seq` clock (the wall clock, as each shard's).
    public var seqNow: Int { RedisRoomEngine.wallSeqClock() }

    /// Every shard answers, and a cluster's every slot has a master: asked now.
    private var everyShardAnswers: Bool {
        routing.withLock { routing in
            routing.shards.allSatisfy(\.isAvailable) && (!routing.isCluster || routing.cluster?.isComplete == true)
        }
    }

    public func start() {
        for shard in shards { shard.start() }
        discovery?.start()
    }

    public func stop() {
        discovery?.stop()
        for shard in shards { shard.stop() }
    }

    // MARK: RoomEngine: each call goes to the room's shard

    public func attach(room: String, reply: @escaping @Sendable (RoomSnapshot?) -> Void) {
        shard(for: room).attach(room: room, reply: reply)
    }

    public func detach(room: String) {
        shard(for: room).detach(room: room)
    }

    public func scroll(room: String, session: String, suffix: [UInt8], seq: Int, done: @escaping @Sendable (EngineResult) -> Void) {
        shard(for: room).scroll(room: room, session: session, suffix: suffix, seq: seq, done: done)
    }

    public func publish(led message: [UInt8], seq: Int, by: String, room: String, keep: Bool) {
        shard(for: room).publish(led: message, seq: seq, by: by, room: room, keep: keep)
    }

    public func forgetLed(room: String) {
        shard(for: room).forgetLed(room: room)
    }

    public func askNewest(room: String) {
        shard(for: room).askNewest(room: room)
    }

    public func control(room: String, _ action: ControlAction, done: @escaping @Sendable (EngineResult) -> Void) {
        shard(for: room).control(room: room, action, done: done)
    }

    public func share(document message: [UInt8], room: String, done: @escaping @Sendable (EngineResult) -> Void) {
        shard(for: room).share(document: message, room: room, done: done)
    }

    public func setFollowKey(room: String, record: String) {
        shard(for: room).setFollowKey(room: room, record: record)
    }

    public func bindKey(room: String, digest: String, reply: @escaping @Sendable (String?) -> Void) {
        shard(for: room).bindKey(room: room, digest: digest, reply: reply)
    }

    public func presence(room: String, counts: Presence) {
        shard(for: room).presence(room: room, counts: counts)
    }

    public func take(count: String, room: String, limit: Int, windowMilliseconds: Int, reply: @escaping @Sendable (Bool?) -> Void) {
        shard(for: room).take(count: count, room: room, limit: limit, windowMilliseconds: windowMilliseconds, reply: reply)
    }

    public func giveBack(count: String, room: String) {
        shard(for: room).giveBack(count: count, room: room)
    }

    public func refused(_ refusal: SharedInput.Refusal, room: String) {
        shard(for: room).refused(refusal, room: room)
    }

    public func reconcile(room: String, local: RoomSnapshot, reply: @escaping @Sendable (RoomSnapshot?) -> Void) {
        shard(for: room).reconcile(room: room, local: local, reply: reply)
    }

    // MARK: SharedRoomsDelegate: the shards' news, passed on

    public func shared(room: String, version: Int, change: SharedChange) {
        delegate?.shared(room: room, version: version, change: change)
    }

    public func shared(room: String, led state: ScrollState) {
        delegate?.shared(room: room, led: state)
    }

    public func sharedStateWanted(room: String) {
        delegate?.sharedStateWanted(room: room)
    }

    public func sharedChangesMissed(room: String) {
        delegate?.sharedChangesMissed(room: room)
    }

    public func shared(room: String, node: String, presence: Presence) {
        delegate?.shared(room: room, node: node, presence: presence)
    }

    /// A shard came or went: the delegate hears when the whole did.
    public func sharedAvailability(_: Bool) {
        let (whole, changed) = reported.withLock { reported -> (Bool, Bool) in
            let whole = everyShardAnswers
            self.available.store(whole, ordering: .releasing)
            defer { reported = whole }
            return (whole, reported != whole)
        }
        if changed { delegate?.sharedAvailability(whole) }
    }
}

/// The Redis engines a node shares rooms through, as they are now (a cluster's masters come
/// and go), for health checks and metrics.
package struct RedisShardList: Sendable {
    package let engine: (any RoomEngine)?

    package init(engine: (any RoomEngine)?) {
        self.engine = engine
    }

    package var current: [RedisRoomEngine] {
        switch engine {
        case let sharded as ShardedRoomEngine: sharded.shards
        case let one as RedisRoomEngine: [one]
        default: []
        }
    }

    package var isEmpty: Bool { engine == nil }
    /// Rooms are shared (every shard answers; a cluster's every slot has a master).
    package var isAvailable: Bool { engine?.isAvailable ?? false }
    /// Each counter once (a cluster's engines share theirs).
    package var counters: [EngineCounters] {
        var seen = Set<ObjectIdentifier>()
        return current.map(\.statistics).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }
}
