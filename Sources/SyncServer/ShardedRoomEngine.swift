import ScrollModel
import Synchronization

/// Rooms spread over several Redis servers by a stable hash of the room's name (as Centrifugo
/// shards its Redis engine): each room lives on one shard, where its changes are ordered, its
/// lease held and its channel published, so capacity grows with the servers. Every node must
/// list the same servers in the same order (`redis.url`, then `redis.shards`). The rooms are
/// shared while every shard answers; when one does not, this node serves its rooms alone and
/// reconciles them when it is back, as with one Redis.
public final class ShardedRoomEngine: RoomEngine, SharedRoomsDelegate, @unchecked Sendable {
    public let shards: [RedisRoomEngine]
    public weak var delegate: (any SharedRoomsDelegate)?
    /// What the delegate was last told, so that it hears each change of the whole once.
    private let reported = Mutex<Bool>(false)

    public init(shards: [RedisRoomEngine]) {
        precondition(!shards.isEmpty, "a sharded engine needs a shard")
        self.shards = shards
        for shard in shards { shard.delegate = self }
    }

    /// The shard that holds `room`: FNV-1a of its name, so every node picks the same one.
    public func shard(for room: String) -> RedisRoomEngine {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in room.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return shards[Int(hash % UInt64(shards.count))]
    }

    public var isAvailable: Bool { shards.allSatisfy(\.isAvailable) }

    public func start() { for shard in shards { shard.start() } }
    public func stop() { for shard in shards { shard.stop() } }

    // MARK: RoomEngine: each call goes to the room's shard

    public func attach(room: String, reply: @escaping @Sendable (RoomSnapshot?) -> Void) {
        shard(for: room).attach(room: room, reply: reply)
    }

    public func scroll(room: String, session: String, suffix: [UInt8], done: @escaping @Sendable (EngineResult) -> Void) {
        shard(for: room).scroll(room: room, session: session, suffix: suffix, done: done)
    }

    public func publish(led message: [UInt8], seq: Int, room: String, keep: Bool) {
        shard(for: room).publish(led: message, seq: seq, room: room, keep: keep)
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

    public func shared(room: String, node: String, presence: Presence) {
        delegate?.shared(room: room, node: node, presence: presence)
    }

    /// A shard came or went: the delegate hears when the whole did.
    public func sharedAvailability(_ available: Bool) {
        let whole = isAvailable
        let changed = reported.withLock { reported -> Bool in
            defer { reported = whole }
            return reported != whole
        }
        if changed { delegate?.sharedAvailability(whole) }
    }
}
