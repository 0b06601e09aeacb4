import ScrollModel
import Testing

/// A presenter who goes while its node cannot reach Redis gives control back once the node
/// merges (docs/cluster.md §7.19): before, its lease stayed until it expired, every node named
/// a driver in no room, and a claim was refused meanwhile.
extension ClusterSimulationTests {
    static let lease = "scrollsync:{\(ClusterSimulation.room)}:lease"

    /// Two nodes: Ann presents on node 0 (she drives) and has moved; `other` joins node 1.
    static func annDriving(seed: UInt64, other: Role) throws -> (ClusterSimulation, ann: SimMember, other: SimMember) {
        let simulation = try simulation(seed: seed, nodes: 2)
        simulation.join(.presenter, on: 0)
        simulation.join(other, on: 1)
        simulation.advance(200_000_000)
        simulation.scroll(simulation.members[0])
        simulation.advance(100_000_000)
        return (simulation, simulation.members[0], simulation.members[1])
    }

    /// After the merge: no lease, `member` told nobody drives, and the invariants kept.
    static func expectControlGivenBack(_ simulation: ClusterSimulation, heardBy member: SimMember) {
        simulation.advance(1_500_000_000)  // the node reconnected (every 0.5 s) and merged
        #expect(!simulation.redis.exists(lease), "the lease is given back")
        #expect(member.driver == nil, "\(member.name) hears nobody drives: \(member.driver ?? "nobody")")
        simulation.quiesce()
        #expect(simulation.outcome.broken.isEmpty, "\(simulation.outcome.description)")
    }

    /// Ann's node's links to Redis drop; she leaves while it serves the room alone (no release
    /// can be sent), and it merges 0.5 s later. Before, the lease (renewed every second until
    /// then) stayed hers for up to 5 s more, and the merge's snapshot named her driver again.
    @Test func aDriverWhoLeavesWhileHerNodeIsApartGivesControlBackAtTheMerge() throws {
        let (simulation, ann, follower) = try Self.annDriving(seed: 47, other: .follower)
        #expect(follower.driver == ann.id && simulation.redis.exists(Self.lease))
        simulation.dropConnections(of: 0)
        simulation.advance(10_000_000)
        simulation.leave(ann)
        Self.expectControlGivenBack(simulation, heardBy: follower)
    }

    /// Ann's node's links to Redis drop; she sends `release` while it serves the room alone and
    /// stays (seed 41082 with Redis stops). Before, her node's merge sent no driver and the
    /// lease, still hers, named her driver again on every node.
    @Test func aDriverWhoReleasesWhileHerNodeIsApartAndStaysGivesControlBackAtTheMerge() throws {
        let (simulation, ann, follower) = try Self.annDriving(seed: 49, other: .follower)
        #expect(follower.driver == ann.id && simulation.redis.exists(Self.lease))
        simulation.dropConnections(of: 0)
        simulation.advance(10_000_000)
        simulation.send(#"{"type":"control","action":"release"}"#, from: ann, "release")
        simulation.advance(10_000_000)
        #expect(ann.driver == nil, "applied on her node at once")
        Self.expectControlGivenBack(simulation, heardBy: follower)
        #expect(ann.driver == nil, "and she is not named again")
    }

    /// Bob on node 1 takes control while Redis is stopped, and leaves; his node gives up on Redis
    /// (the take's outcome unknown, his release cannot be sent), and the take runs when Redis
    /// answers again (seeds 201536, 202764, 205195, 210495). Before, the lease stayed Bob's for
    /// 5 s after that, every node naming him driver.
    @Test func aTakerWhoLeavesWhileRedisIsStoppedGivesControlBackAtTheMerge() throws {
        let (simulation, ann, bob) = try Self.annDriving(seed: 48, other: .presenter)
        simulation.redis.freeze(for: 6_000_000_000)
        simulation.send(#"{"type":"control","action":"take"}"#, from: bob, "take")
        simulation.advance(20_000_000)
        simulation.leave(bob)
        simulation.advance(6_000_000_000)  // the take runs at the thaw
        Self.expectControlGivenBack(simulation, heardBy: ann)
    }
}
