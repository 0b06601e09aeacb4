import Access
@testable import Hub
import ScrollModel
@testable import SyncServer

/// Follow keys in the simulation's schedule (`Options.followKeys`, docs/cluster.md §8): every
/// presenter joins with a presenter token (a presenter that proves itself may set a follow
/// key; a room a token presenter made private takes token presenters only), some of them with
/// a follow key (the room becomes private, or takes another key: followers are evicted on every
/// node); followers join with the key the schedule set last, a wrong one, or none. After
/// quiescence, I7: every node that holds the room holds the follow key record the room's hash
/// holds, and no follower who joined without that key is still a member.
extension ClusterSimulation {
    /// The keys presenters give; followers try them too (a wrong one is another of these).
    static let followKeys = ["fk-alpha-1", "fk-bravo-2", "fk-charlie-3"]
    /// `auth.secret` of every node (signs the presenters' tokens) and `redis.secret` (signs
    /// every channel message, `Options.signed`): 32 bytes at least.
    static let authSecret = "simulation-auth-secret-0123456789abcdef"
    static let redisSecret = "simulation-redis-secret-0123456789abcdef"
    /// A presenter token for the room (no expiry: the simulation's clock is virtual).
    static let presenterToken = TokenVerifier(secret: authSecret).mint(TokenClaims(room: room, role: .presenter), issuedAt: 0)
    /// The room's hash in `SimRedis`.
    static let hashKey = "scrollsync:{\(room)}"

    /// A join's query with follow keys on: a presenter's token and, sometimes, the follow key
    /// it sets; a follower's key (the one set last, a wrong one, or none). Draws nothing with
    /// follow keys off, so that other seeds' schedules stay theirs.
    func access(for role: Role) -> (parameters: [String], followKey: String?) {
        guard options.followKeys else { return ([], nil) }
        if role == .presenter {
            guard random.chance(0.35) else { return (["token=\(Self.presenterToken)"], nil) }
            let key = Self.followKeys[random.below(Self.followKeys.count)]
            followKey = key
            return (["token=\(Self.presenterToken)", "followKey=\(key)"], key)
        }
        let roll = random.below(10)
        let key: String?
        switch roll {
        case 0..<6: key = followKey
        case 6..<8:
            let others = Self.followKeys.filter { $0 != followKey }
            key = others[random.below(others.count)]
        default: key = nil
        }
        return (key.map { ["followKey=\($0)"] } ?? [], key)
    }

    /// The follow key record the room's hash holds (nil: the room is public).
    var sharedFollowKeyRecord: String? {
        redis.hgetText(Self.hashKey, "fkey").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The key of the schedule's that opens the room now (nil: public, or no key matches).
    var openingFollowKey: String? {
        sharedFollowKeyRecord.flatMap { record in Self.followKeys.first { FollowKey.matches($0, record: record) } }
    }

    /// I7 after quiescence (docs/cluster.md §6): every node's copy of the room holds the
    /// room's follow key record, that record is one a presenter gave, and every follower still
    /// in the room joined with its key.
    func checkFollowKeys() {
        let record = sharedFollowKeyRecord
        if let record, openingFollowKey == nil { broke("I7", "the room's follow key record \(record.prefix(24))… matches no key a presenter gave") }
        for (node, server) in servers.enumerated() {
            guard let server, let room = server.hub.rooms.withLock({ $0[Self.room] }) else { continue }
            let held = room.guarded.withLock { $0.removed ? nil : Optional($0.core.followKey) }
            guard let held, held != record else { continue }
            broke("I7", "node \(node) holds follow key \(describe(held)), the room's hash \(describe(record))")
        }
        guard let record else { return }
        for member in members where member.role == .follower && member.alive && member.welcomed && !member.closed {
            if let key = member.followKey, FollowKey.matches(key, record: record) { continue }
            broke("I7", "\(member.name) on node \(member.node) joined with \(member.followKey ?? "no key") and is still a member; the room's key is \(openingFollowKey ?? "none of the schedule's")")
        }
    }

    private func describe(_ record: String?) -> String {
        guard let record else { return "none" }
        return Self.followKeys.first { FollowKey.matches($0, record: record) } ?? "record \(record.prefix(24))…"
    }
}
