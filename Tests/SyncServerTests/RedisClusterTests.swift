import Foundation
import RedisClient
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Redis Cluster's map of slots")
struct RedisClusterMapTests {
    @Test func aKeysSlotIsCRC16OfTheKeyOrOfItsHashTag() {
        #expect(RedisClusterMap.slot(of: "123456789") == 12_739, "CRC16/XMODEM's check value 0x31C3")
        #expect(RedisClusterMap.slot(of: "scrollsync:{x}") == 16_287)
        #expect(RedisClusterMap.slot(of: "scrollsync:{x}:lease") == RedisClusterMap.slot(of: "x"), "a room's keys share its slot")
        #expect(RedisClusterMap.slot(of: "foo{bar}{zap}") == RedisClusterMap.slot(of: "bar"), "the first tag counts")
        #expect(RedisClusterMap.slot(of: "foo{{bar}}zap") == RedisClusterMap.slot(of: "{bar"))
        #expect(RedisClusterMap.slot(of: "foo{}{bar}") != RedisClusterMap.slot(of: "bar"), "an empty tag hashes the whole key")
    }

    func node(_ host: String, _ port: Int) -> RedisReply { .array([.string(Array(host.utf8)), .integer(port), .string(Array("id".utf8))]) }
    func range(_ first: Int, _ last: Int, _ nodes: RedisReply...) -> RedisReply { .array([.integer(first), .integer(last)] + nodes) }

    @Test func aRepliesMastersServeTheirRangesAndEmptyHostsAreTheNodeAsked() throws {
        let map = try RedisClusterMap(slotsReply: .array([
            range(0, 5460, node("10.0.0.1", 7000), node("10.0.0.4", 7000)),
            range(5461, 10922, node("", 7001)),
            range(10923, 16383, node("10.0.0.3", 7002)),
        ]), askedHost: "10.0.0.9")
        #expect(map.masters.map(\.description) == ["10.0.0.1:7000", "10.0.0.9:7001", "10.0.0.3:7002"])
        #expect(map.replicas.map(\.description) == ["10.0.0.4:7000"])
        #expect(map.master(ofSlot: 0) == 0 && map.master(ofSlot: 5461) == 1 && map.master(ofSlot: 16_383) == 2)
        #expect(map.isComplete)
        let partial = try RedisClusterMap(slotsReply: .array([range(0, 100, node("h", 1))]), askedHost: "h")
        #expect(!partial.isComplete && partial.master(ofSlot: 101) == nil)
    }

    @Test(arguments: [
        RedisReply.status("OK"),
        .array([.array([.integer(0), .integer(16_384), .array([.string(Array("h".utf8)), .integer(1)])])]),
        .array([.array([.integer(9), .integer(3), .array([.string(Array("h".utf8)), .integer(1)])])]),
        .array([.array([.integer(0), .integer(1), .array([.string(Array("h".utf8)), .integer(70_000)])])]),
        .array([.array([.integer(0), .integer(1), .array([.string(Array("h\u{1b}[2J".utf8)), .integer(1)])])]),
        .array([.array([.integer(0), .integer(1), .array([.string(Array("?".utf8)), .integer(1)])])]),
        .array([.array([.integer(0), .integer(1)])]),
    ])
    func aReplyThatIsNotAMapIsRefusedWhole(_ reply: RedisReply) {
        #expect(throws: RedisError.self) { try RedisClusterMap(slotsReply: reply, askedHost: "h") }
    }
}

/// Nodes sharing rooms through a real Redis Cluster of three masters and three replicas.
@Suite("Rooms on a Redis Cluster", .serialized)
struct RedisClusterTests {
    @Test func roomsLiveOnTheirSlotsMastersWithShardedChannelsAndOutliveAMastersFailover() throws {
        let servers = try RedisClusterServers()
        func node() throws -> InProcessNode {
            try InProcessNode {
                $0.redisURL = servers.url
                $0.redisShards = ["redis://127.0.0.1:\(servers.ports[1])"]
                $0.redisCluster = true
            }
        }
        let (a, b) = (try node(), try node())
        let cluster = ClusterTests()
        for server in [a, b] {
            #expect(cluster.eventually { (try? httpGet("/healthz", port: server.port))?.contains("redis: up") == true }, "the map is read")
        }
        #expect(try metricValue(#"scrollsync_redis_shards{state="configured"}"#, port: a.port) == 3, "three masters")
        for key in ["scrollsync:{talk}", "scrollsync:{ünï}", "a{b}c", "foo{}{bar}", "foo{{bar}}zap"] {
            let slot = try servers.cli(servers.ports[0], "cluster", "keyslot", key).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(Int(slot) == RedisClusterMap.slot(of: key), "\(key): Redis says \(slot)")
        }

        let rooms = (0..<9).map { "cl-\($0)" }
        let pairs = try cluster.drivenRooms(rooms, presentersOn: a, followersOn: b)
        // A node whose first seed is down finds the cluster through the next one.
        let deadSeed = try freePort()
        let c = try InProcessNode {
            $0.redisURL = "redis://127.0.0.1:\(deadSeed)"
            $0.redisShards = [servers.url]
            $0.redisCluster = true
        }
        #expect(cluster.eventually { (try? httpGet("/healthz", port: c.port))?.contains("redis: up") == true },
                "the map is read through a seed that answers: \((try? httpGet("/healthz", port: c.port)) ?? "")")
        let (onC, welcomeOnC) = try cluster.join(c, rooms[1])
        #expect(welcomeOnC["state"]?["offset"]?.double == 2, "a room driven through the cluster, on the third node: \(welcomeOnC)")
        withExtendedLifetime(onC) {}

        var holders = [String: Int]()
        for room in rooms { holders[room] = try servers.master(of: "scrollsync:{\(room)}") }
        #expect(holders.count == rooms.count, "every room is kept on a master: \(holders)")
        #expect(Set(holders.values).count == 3, "the rooms spread over the three masters: \(holders)")
        for (room, port) in holders {
            let counts = try servers.cli(port, "pubsub", "shardnumsub", "scrollsync:{\(room)}").split(separator: "\n")
            let holding = room == rooms[1] ? "3" : "2"  // the third node holds one room
            #expect(counts.last.map(String.init) == holding, "the nodes that hold \(room) hear it on its master by sharded pub/sub: \(counts)")
        }
        #expect(try servers.cli(servers.ports[0], "pubsub", "numpat").trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                "no node subscribes to every room")

        // A master dies; its replica takes over; both nodes find the new map and every room is
        // shared again, the dead master's too, with seq going only forward.
        let victimRoom = rooms[0], victim = try #require(holders[rooms[0]])
        servers.kill(victim)
        #expect(cluster.eventually(timeout: 10) { (try? httpGet("/healthz", port: a.port))?.contains("redis: unavailable") == true },
                "degraded while the master is down: \((try? httpGet("/healthz", port: a.port)) ?? "")")
        #expect(cluster.eventually(timeout: 30) { (try? servers.masters()).map { $0.count == 3 && !$0.contains(victim) } == true },
                "a replica took over: \((try? servers.masters()) ?? [])")
        for server in [a, b] {
            #expect(cluster.eventually(timeout: 30) { (try? httpGet("/healthz", port: server.port))?.contains("redis: up") == true },
                    "the new master is found: \((try? httpGet("/healthz", port: server.port)) ?? "")")
        }
        for (index, room) in rooms.enumerated() {
            let (presenter, follower) = pairs[index]
            let offset = 500 + index
            #expect(cluster.eventually(timeout: 20) {
                presenter.send(cluster.scroll(offset))
                return follower.wait(timeout: 1, for: cluster.hasOffset(offset))
            }, "\(room) is shared after the failover: \(follower.received.suffix(2))")
            let seqs = cluster.states(follower).compactMap { $0["seq"]?.double }
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "\(room): seq only goes forward: \(seqs)")
            #expect(!presenter.received.contains { $0.contains(#""code":"not_driver""#) }, "\(room) keeps its one driver")
        }
        #expect(try servers.master(of: "scrollsync:{\(victimRoom)}") != nil, "the dead master's room is kept by its successor")
        let (late, welcome) = try cluster.join(b, victimRoom)
        #expect(welcome["state"]?["offset"]?.double == 500, "a late joiner gets the room's state at once: \(welcome)")
        withExtendedLifetime(late) {}
        #expect(try metricValue("scrollsync_redis_outages_total", port: a.port) >= 1)
        withExtendedLifetime(pairs) {}
    }
}
