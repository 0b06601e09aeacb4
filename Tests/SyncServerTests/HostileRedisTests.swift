import Foundation
import ScrollModel
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Anyone who can reach the Redis that nodes share can publish on a room's channel and write
/// its hashes: what a node reads there is refused unless it passes the protocol's checks
/// (a real redis-server, redis-cli as the attacker).
@Suite("Hostile Redis", .serialized)
struct HostileRedisTests {
    let cluster = ClusterTests()

    func refused(_ node: any ServerNode, _ reason: String) -> Double {
        (try? metricValue("scrollsync_redis_refused_total{reason=\"\(reason)\"}", port: node.port)) ?? -1
    }

    /// One room on two nodes: a presenter on A, a follower on B that has seen offset 10.
    func room(_ name: String, _ a: any ServerNode, _ b: any ServerNode) throws -> (presenter: RoomConnection, follower: RoomConnection) {
        let (presenter, welcome) = try cluster.join(a, name, query: "role=presenter&key=k&name=Ann")
        // The lease in Redis makes it the driver: its scrolls count from then on.
        let me = try #require(welcome["you"]?.string)
        guard presenter.wait(for: { $0.contains(#""type":"driver","driver":"\#(me)""#) }) else { throw Failure("no lease: \(presenter.received)") }
        let (follower, _) = try cluster.join(b, name)
        presenter.send(cluster.scroll(10))
        guard follower.wait(for: cluster.hasOffset(10)) else { throw Failure("the room does not work before the attack: \(follower.received)") }
        return (presenter, follower)
    }

    @Test func hostilePublishesAreRefusedCountedAndNeverForwardedAndTheRoomKeepsWorking() throws {
        let redis = try RedisServer()
        let (a, b) = (try cluster.sharingNode(redis), try cluster.sharingNode(redis))
        let (presenter, follower) = try room("room1", a, b)
        let by = "0123456789abcdef"
        let hostile = [
            // Counts that overflow a sum (this trapped every node), and their persistent form.
            "P evilnode 9223372036854775807 9223372036854775807 0",
            "P 00000000000000aa 9223372036854775807 9223372036854775807 0",
            "P 00000000000000bb 5 -3 0",
            // States the protocol forbids.
            #"1000 {"type":"state","seq":1000,"offset":-1e300,"viewport":-5,"content":1e300,"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#,
            #"1000 {"type":"state","seq":1000,"offset":5,"anchor":{"id":"x","fraction":7},"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#,
            #"1000 {"type":"state","seq":1000,"offset":5,"anchor":{"id":"\#(String(repeating: "a", count: 100_000))","fraction":0},"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#,
            #"1000 {"type":"state","seq":1000,"offset":5,"direction":"down","atTop":false,"atBottom":false,"by":"\u001b]52;c;aGk=\u0007"}"#,
            // Led states (the lease holder's own, `S STATE`) pass the same checks; S carries states only.
            #"S {"type":"state","seq":1000,"offset":-1e300,"viewport":-5,"content":1e300,"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#,
            #"S {"type":"state","seq":1000,"offset":5,"direction":"down","atTop":false,"atBottom":false,"by":"\u001b]52;c;aGk=\u0007"}"#,
            #"S {"type":"driver","driver":"\#(by)","name":"x"}"#,
            // A driver that is not a session id; a name far over the limit.
            #"1000 {"type":"driver","driver":"\u001b[2J","name":"x"}"#,
            #"1000 {"type":"driver","driver":"\#(by)","name":"\#(String(repeating: "n", count: 5000))"}"#,
            // Not a message at all.
            "garbage", "12 not json", "-5 {}",
        ]
        for payload in hostile { try redis.cli(["PUBLISH", "scrollsync:{room1}", payload]) }
        // A document 20 times over the limit, with a fingerprint of its own choosing.
        let big = #"1000 {"type":"document","name":"big","format":"text","doc":"0000000000000000","by":"\#(by)","text":"\#(String(repeating: "x", count: 2 << 20))"}"#
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("scrollsync-big-\(getpid()).txt")
        try big.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let piped = try run("/bin/sh", ["-c", "redis-cli -p \(redis.port) -x PUBLISH 'scrollsync:{room1}' < '\(file.path)'"], timeout: 30)
        #expect(piped.status == 0, "\(piped.output)")

        for node in [a, b] {
            #expect(cluster.eventually { refused(node, "invalid") + refused(node, "malformed") >= Double(hostile.count + 1) },
                    "every hostile message is counted: invalid \(refused(node, "invalid")), malformed \(refused(node, "malformed"))")
            #expect(node.isRunning, "the node survives")
        }
        // The real presenter still drives every node, and nothing hostile reached a member.
        presenter.send(cluster.scroll(20))
        #expect(follower.wait(for: cluster.hasOffset(20)), "\(follower.received.suffix(2))")
        for connection in [presenter, follower] {
            #expect(!connection.received.contains { $0.contains("1e300") || $0.contains("\\u001b") || $0.contains("\"big\"") || $0.contains("aaaaaaaa") },
                    "nothing hostile is forwarded")
            #expect(!connection.received.contains { $0.contains("9223372036854775807") })
        }
        let (late, welcome) = try cluster.join(b, "room1")
        _ = late
        #expect(welcome["state"]?["offset"]?.double == 20)
        #expect(welcome["presence"]?["followers"]?.double ?? 99 <= 3, "no injected counts: \(welcome)")
        let log = b.output
        #expect(log.contains("refused what redis holds"), "the refusal is logged")
        #expect(!log.contains("\u{1B}"), "the log holds no control character from Redis")
    }

    /// Anyone who can publish on a room's channel can ask its nodes for the newest state (`Q`):
    /// the lease holder's node orders its state again at most once per write-back interval
    /// (and once more at its end), so 200 questions at once reach the members as two states
    /// more, not 200.
    @Test func aFloodOfQuestionsForTheNewestStateIsNoFloodOfStatesToMembers() throws {
        let redis = try RedisServer()
        let (a, b) = (try cluster.sharingNode(redis), try cluster.sharingNode(redis))
        let (presenter, follower) = try room("room3", a, b)
        try redis.cli(["EVAL", "for i = 1, 200 do redis.call('PUBLISH', KEYS[1], ARGV[1]) end return 1", "1",
                       "scrollsync:{room3}", "Q 00000000000000aa"])
        let again = { cluster.states(follower).filter { $0["offset"]?.double == 10 } }
        #expect(follower.wait { _ in again().count >= 3 }, "ordered again at once and at the interval's end: \(again().count)")
        presenter.send(cluster.scroll(30))
        #expect(follower.wait(for: cluster.hasOffset(30)), "\(follower.received.suffix(2))")
        #expect(again().count <= 4, "not one state per question: \(again().count)")
        let seqs = again().compactMap { $0["seq"]?.double }
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "\(seqs)")
    }

    @Test func anImpossibleVersionCannotFreezeTheRoomAndAPoisonedNodeTableCannotCrashAJoin() throws {
        let redis = try RedisServer()
        let (a, b) = (try cluster.sharingNode(redis), try cluster.sharingNode(redis))
        let (presenter, follower) = try room("room2", a, b)
        let by = "0123456789abcdef"
        let frozen = #"9223372036854775807 {"type":"state","seq":999999999999999,"offset":777,"viewport":10,"content":1000,"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#
        try redis.cli(["PUBLISH", "scrollsync:{room2}", frozen])
        let nearFuture = #"999999 {"type":"state","seq":999999999999,"offset":778,"viewport":10,"content":1000,"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#
        try redis.cli(["PUBLISH", "scrollsync:{room2}", nearFuture])
        let far = String(Int(Date().timeIntervalSince1970 * 1000) + 10 * 365 * 86_400_000)
        try redis.cli(["HSET", "scrollsync:{room2}:nodes", "00000000000000ee", "9223372036854775807 0 0 \(far)"])
        try redis.cli(["HSET", "scrollsync:{room2}:nodes", "00000000000000ef", "1 1 0 \(far)"])
        #expect(cluster.eventually { refused(b, "malformed") + refused(b, "implausible") >= 2 }, "the versions are refused or reconciled")

        presenter.send(cluster.scroll(30))
        #expect(follower.wait(for: cluster.hasOffset(30)), "the presenter still reaches followers: \(follower.received.suffix(2))")
        #expect(!follower.received.contains { $0.contains(#""offset":777"#) || $0.contains(#""offset":778"#) }, "the injected states are not adopted")
        // A node that fetches the room now (a first join) reads the poisoned node table.
        let c = try cluster.sharingNode(redis)
        let (late, welcome) = try cluster.join(c, "room2")
        // Its state: from the hash, or (written back once the room rests) the lease holder's answer.
        #expect(welcome["state"]?["offset"]?.double == 30 || late.wait(for: cluster.hasOffset(30)), "\(welcome) \(late.received.suffix(2))")
        #expect(c.isRunning)
        presenter.send(cluster.scroll(40))
        #expect(late.wait(for: cluster.hasOffset(40)))
        #expect(refused(c, "snapshot") >= 1, "the poisoned entry is counted")
        #expect(!late.received.contains { $0.contains("9223372036854775807") })
    }

    @Test func anUnreadableKeyRecordInRedisLocksTheRoomInsteadOfOpeningIt() throws {
        let redis = try RedisServer()
        try redis.cli(["HSET", "scrollsync:{locked}", "key", "not a key record", "ver", "1"])
        let a = try cluster.sharingNode(redis)
        let presenter = try RoomConnection(port: a.port, path: "/rooms/locked?role=presenter&key=mine")
        #expect(presenter.wait { $0.contains("unauthorized") } || presenter.closed, "a presenter cannot take a room whose key record is unreadable: \(presenter.received)")
        #expect(!presenter.received.contains { $0.contains(#""type":"welcome""#) })
    }
}

@Suite("Limits across nodes", .serialized)
struct ClusterLimitTests {
    let cluster = ClusterTests()

    /// The answer to a presenter join with `key`: "welcome", "unauthorized" or "limited".
    func attempt(_ node: any ServerNode, key: String) throws -> String {
        let connection = try RoomConnection(port: node.port, path: "/rooms/vault?role=presenter&key=\(key)")
        if connection.status.contains(" 429 ") { return "limited" }
        guard connection.wait(for: { $0.contains(#""type":"welcome""#) || $0.contains(#""type":"error""#) }) else { return "no answer" }
        if connection.received.contains(where: { $0.contains(#""type":"welcome""#) }) { return "welcome" }
        return connection.received.contains { $0.contains("rate_limited") } ? "limited" : "unauthorized"
    }

    @Test func wrongKeysCountOnEveryNodeTogether() throws {
        let redis = try RedisServer()
        let (a, b) = (try cluster.sharingNode(redis), try cluster.sharingNode(redis))
        let (owner, _) = try cluster.join(a, "vault", query: "role=presenter&key=right")
        _ = owner
        let onA = try (0..<7).map { try attempt(a, key: "wrong\($0)") }
        let onB = try (0..<7).map { try attempt(b, key: "wrong-b\($0)") }
        #expect(onA.allSatisfy { $0 == "unauthorized" }, "\(onA)")
        #expect(onB.filter { $0 == "unauthorized" }.count == 3, "10 a minute over both nodes, not 10 each: \(onB)")
        #expect(onB.suffix(4).allSatisfy { $0 == "limited" }, "\(onB)")
    }
}

@Suite("Private rooms across nodes", .serialized)
struct ClusterPrivateRoomTests {
    let cluster = ClusterTests()

    @Test func aRoomMadePrivateOnOneNodeIsPrivateOnEveryNode() throws {
        let redis = try RedisServer()
        let (a, b) = (try cluster.sharingNode(redis), try cluster.sharingNode(redis))
        let early = try RoomConnection(port: b.port, path: "/rooms/board")
        #expect(early.wait { $0.contains(#""type":"welcome""#) }, "a follower on B before the room is private")
        let (presenter, _) = try cluster.join(a, "board", query: "role=presenter&key=k&followKey=fk-cluster-1")
        _ = presenter
        #expect(early.wait { $0.hasPrefix("close 1008") }, "the follower on B is closed when the room becomes private: \(early.received)")
        let refused = try RoomConnection(port: b.port, path: "/rooms/board")
        #expect(refused.status.contains(" 401 "), "B knows the room is private before the upgrade: \(refused.answer)")
        let (admitted, _) = try cluster.join(b, "board", query: "followKey=fk-cluster-1")
        _ = admitted
        // A third node fetches the room from Redis: private there too.
        let c = try cluster.sharingNode(redis)
        let onC = try RoomConnection(port: c.port, path: "/rooms/board")
        #expect(onC.wait { $0.contains("is private") }, "C fetches the room and refuses the follower: \(onC.received)")
        #expect(!onC.received.contains { $0.contains(#""type":"welcome""#) })
    }
}

extension ClusterTests {
    /// A node that has connected to Redis (its rooms are shared from its first join).
    func sharingNode(_ redis: RedisServer) throws -> any ServerNode {
        let node = try node(redis)
        guard eventually(timeout: 15, { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true }) else {
            throw Failure("node on port \(node.port) did not connect to Redis: \(node.output)")
        }
        return node
    }
}

@Suite("Documents from Redis within a node's budget", .serialized)
struct RemoteByteBudgetTests {
    let cluster = ClusterTests()

    /// A valid document published in order still counts against the receiving node's budget
    /// for documents (limits.documentsTotalBytes), as a client's would: over it, it is refused.
    @Test func aPublishedDocumentOverTheNodesBudgetIsRefused() throws {
        let redis = try RedisServer()
        let node = try InProcessNode {
            $0.redisURL = redis.url
            $0.limits.documentsTotalBytes = 2048
        }
        #expect(cluster.eventually { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true })
        let (follower, _) = try cluster.join(node, "budget")
        let version = try run("/usr/bin/env", ["redis-cli", "-p", String(redis.port), "HGET", "scrollsync:{budget}", "ver"], timeout: 20)
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
        let next = (Int(version) ?? 0) + 1
        let big = #"\#(next) {"type":"document","name":"big","format":"text","by":"0123456789abcdef","text":"\#(String(repeating: "x", count: 3000))"}"#
        let published = try run("/usr/bin/env", ["redis-cli", "-p", String(redis.port), "PUBLISH", "scrollsync:{budget}", big], timeout: 20)
        #expect(published.status == 0)
        #expect(cluster.eventually { (try? metricValue("scrollsync_redis_refused_total{reason=\"invalid\"}", port: node.port)) == 1 },
                "refused and counted")
        #expect(!follower.received.contains { $0.contains(#""name":"big""#) }, "never forwarded")
        #expect(try metricValue("scrollsync_document_bytes", port: node.port) == 0, "nothing held")
    }
}
