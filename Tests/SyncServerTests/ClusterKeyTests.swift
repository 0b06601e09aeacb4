import Foundation
import Testing

/// A room's presenter key across nodes after Redis forgot it (docs/cluster.md §7.18).
extension ClusterTests {
    /// Redis forgot the room (as after a restart empty); node B fetches it keyless and admits a
    /// presenter without a key, who takes control. Then node A, which holds the room's key,
    /// merges: the key it puts back reaches B (a `key` change), B evicts that presenter (1008),
    /// refuses a presenter without the key, admits one with it, and the intruder no longer
    /// drives A's follower. Before, the merge put the key back into the hash only: B kept
    /// serving the room keyless, and the intruder drove every node's members.
    @Test func aPresenterKeyPutBackByAMergeReachesANodeThatFetchedTheRoomBefore() throws {
        let redis = try RedisServer()
        let a = try node(redis)
        let room = "rekeyed"
        let (ann, welcome) = try join(a, room, query: "role=presenter&key=right")
        let annID = try #require(welcome["you"]?.string)
        #expect(ann.wait { $0.contains(#""driver":"\#(annID)""#) })
        let (follower, _) = try join(a, room)
        ann.send(scroll(10))
        #expect(follower.wait(for: hasOffset(10)))
        let nodeA = try clientIDs(redis)  // A's connections, to drop them alone later
        let b = try node(redis)

        try redis.cli(["FLUSHALL"])
        let (intruder, joined) = try join(b, room, query: "role=presenter")
        let intruderID = try #require(joined["you"]?.string)
        #expect(follower.wait { $0.contains(#""driver":"\#(intruderID)""#) }, "B fetched the room keyless: the intruder took it")
        let heard = follower.received.count
        for id in nodeA { try redis.cli(["CLIENT", "KILL", "ID", id]) }  // A merges; B keeps its connections

        #expect(intruder.wait(timeout: 10) { $0.hasPrefix("close 1008") }, "evicted on B: \(intruder.received.suffix(3))")
        let late = try RoomConnection(port: b.port, path: "/rooms/\(room)?role=presenter")
        #expect(late.wait { $0.contains(#""code":"unauthorized""#) }, "a presenter without the key is refused on B: \(late.received)")
        let (keyed, _) = try join(b, room, query: "role=presenter&key=right")
        #expect(!keyed.received.contains { $0.contains("unauthorized") })
        #expect(eventually {
            follower.wait(timeout: 0.2) { _ in false }
            return follower.received[heard...].contains { $0.contains(#""type":"driver""#) && !$0.contains(intruderID) }
        }, "the intruder no longer drives A's follower: \(follower.received.suffix(4))")
    }

    /// Node B holds the room keyless (a follower joined there first); a presenter on A binds
    /// the room's key. B learns it (a `key` change from the binding): a presenter without the
    /// key, or with a wrong one, is refused there as on A. Before, the binding put the key into
    /// the hash only, and B admitted any presenter, who could take control of every node.
    @Test func aKeyBoundOnOneNodeIsRequiredOnANodeThatHeldTheRoomKeyless() throws {
        let redis = try RedisServer.shared()
        let (a, b) = (try node(redis), try node(redis))
        let room = "bound-late"
        let (follower, _) = try join(b, room)
        let (ann, welcome) = try join(a, room, query: "role=presenter&key=right")
        let annID = try #require(welcome["you"]?.string)
        #expect(ann.wait { $0.contains(#""driver":"\#(annID)""#) })
        #expect(follower.wait { $0.contains(#""driver":"\#(annID)""#) }, "B holds the room: \(follower.received)")
        for query in ["role=presenter", "role=presenter&key=wrong"] {
            let intruder = try RoomConnection(port: b.port, path: "/rooms/\(room)?\(query)")
            #expect(intruder.wait { $0.contains(#""code":"unauthorized""#) }, "\(query) on B: \(intruder.received)")
        }
        let (keyed, _) = try join(b, room, query: "role=presenter&key=right")
        #expect(!keyed.received.contains { $0.contains("unauthorized") })
    }

    /// The ids of the connections Redis holds now (but the asking one's).
    func clientIDs(_ redis: RedisServer) throws -> [String] {
        let list = try run("redis-cli", ["-p", String(redis.port), "CLIENT", "LIST"]).output
        return list.split(separator: "\n").filter { !$0.contains("cmd=client|list") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("id=") }.map { String($0.dropFirst(3)) }
        }
    }
}
