import Foundation
import RedisClient
import ScrollModel
import Testing
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Nodes that share rooms through a real redis-server (Debian: redis-server).
@Suite("Several nodes through Redis", .serialized)
struct ClusterTests {
    /// `redis.secret` of the nodes (`ForgedRedisTests` runs some tests again with one).
    var secret: String?

    /// A node sharing rooms through `redis`, in this process (no `kill -9` needed).
    func node(_ redis: RedisServer) throws -> any ServerNode {
        try InProcessNode {
            $0.redisURL = redis.url
            $0.redisSecret = secret
        }
    }

    /// Joins `room` on `server` and waits for the welcome.
    func join(_ server: any ServerNode, _ room: String, query: String = "") throws -> (RoomConnection, JSON) {
        let connection = try RoomConnection(port: server.port, path: "/rooms/\(room)" + (query.isEmpty ? "" : "?" + query))
        guard connection.status.contains(" 101 "), connection.wait(for: { $0.contains(#""type":"welcome""#) }),
              let text = connection.received.first(where: { $0.contains(#""type":"welcome""#) }) else {
            throw Failure("no welcome on port \(server.port): \(connection.answer) \(connection.received)")
        }
        return (connection, try JSON.parse(text))
    }

    /// In each room, a presenter on `a` (the driver) and a follower on `b`, the room's first
    /// scroll (offset: its index + 1) seen on `b`.
    func drivenRooms(_ rooms: [String], presentersOn a: any ServerNode, followersOn b: any ServerNode) throws
        -> [(presenter: RoomConnection, follower: RoomConnection)] {
        try rooms.enumerated().map { index, room in
            let (presenter, _) = try join(a, room, query: "role=presenter&key=k")
            let (follower, _) = try join(b, room)
            #expect(presenter.wait(timeout: 15) { $0.contains(#""type":"driver","driver":""#) }, "the lease on \(room)")
            presenter.send(scroll(index + 1))
            #expect(follower.wait(for: hasOffset(index + 1)), "\(room) reaches the other node: \(follower.received.suffix(2))")
            return (presenter, follower)
        }
    }

    func states(_ connection: RoomConnection) -> [JSON] {
        connection.received.compactMap { try? JSON.parse($0) }.filter { $0["type"]?.string == "state" }
    }

    /// A connection's states as `seq:offset`, for failure messages.
    func places(_ connection: RoomConnection) -> [String] {
        states(connection).map { "\(Int($0["seq"]?.double ?? -1)):\(Int($0["offset"]?.double ?? -1))" }
    }

    func scroll(_ offset: Int) -> String { #"{"type":"scroll","offset":\#(offset),"viewport":10,"content":1000}"# }

    func hasOffset(_ offset: Int) -> (String) -> Bool {
        { $0.contains(#""type":"state""#) && $0.contains(#""offset":\#(offset),"#) }
    }

    /// Polls `condition` for up to `timeout` seconds.
    func eventually(timeout: TimeInterval = 15, _ condition: () throws -> Bool) rethrows -> Bool {
        try SyncServerTests.eventually(timeout: timeout, condition)
    }

    @Test func followersOnOtherNodesSeeEveryStateInOrderAndLateJoinersGetStateAndDocument() throws {
        let redis = try RedisServer.shared()
        let (a, b, c) = (try node(redis), try node(redis), try node(redis))
        let (presenter, welcome) = try join(a, "talk", query: "role=presenter&key=k&name=Ann")
        let me = try #require(welcome["you"]?.string)
        #expect(presenter.wait { $0.contains(#""type":"driver","driver":"\#(me)""#) }, "the lease makes the first presenter the driver")
        let (onB, _) = try join(b, "talk")
        let (onC, _) = try join(c, "talk")

        presenter.send(##"{"type":"document","name":"notes.md","format":"markdown","text":"# Notes\nline"}"##)
        for offset in 1...40 { presenter.send(scroll(offset * 10)) }
        for follower in [onB, onC] {
            #expect(follower.wait(for: hasOffset(400)), "the newest state reaches another node: \(follower.received.suffix(3))")
            let seqs = states(follower).compactMap { $0["seq"]?.double }
            #expect(!seqs.isEmpty && zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "seq increases: \(seqs)")
            let offsets = states(follower).compactMap { $0["offset"]?.double }
            #expect(zip(offsets, offsets.dropFirst()).allSatisfy { $0 < $1 }, "states arrive in order: \(offsets)")
            #expect(follower.received.contains { $0.contains(#""type":"document""#) && $0.contains("notes.md") })
        }

        let (late, lateWelcome) = try join(c, "talk")
        #expect(lateWelcome["state"]?["offset"]?.double == 400, "\(lateWelcome)")
        #expect(lateWelcome["state"]?["seq"]?.double == states(onB).last?["seq"]?.double)
        #expect(lateWelcome["driver"]?.string == me)
        #expect(lateWelcome["driverName"]?.string == "Ann", "the driver's name travels with it to every node: \(lateWelcome)")
        #expect(lateWelcome["doc"]?.string != nil)
        #expect(late.wait { $0.contains(#""type":"document""#) && $0.contains("# Notes") }, "the document follows the welcome")
        // Presence is the sum over nodes: 1 presenter on A, 1 follower on B, 2 on C.
        #expect(presenter.wait { $0.contains(#""type":"presence","presenters":1,"followers":3,"#) }, "\(presenter.received.suffix(3))")
    }

    /// Issue 30.4: the lease holder's node orders its driver's states and publishes them
    /// without a script. When control moves, what the previous holder's node still sends
    /// before it hears of it (here forged with redis-cli: a publish and the room's hash) is,
    /// while the new driver has not moved, the room's last place: taken alike on every node
    /// (Bob's orders it again under Bob), its members told nobody drives first (I5), one state
    /// per `seq` (I1); the new driver's first state leaps above it, so a node that fetches the
    /// room from Redis afterwards ends on the new driver's state.
    @Test func whenControlMovesThePreviousHoldersLateStatesAreTakenAlikeEverywhere() throws {
        let redis = try RedisServer()
        let (a, b) = (try sharingNode(redis), try sharingNode(redis))
        let (ann, annWelcome) = try join(a, "handover", query: "role=presenter&name=Ann")
        let annID = try #require(annWelcome["you"]?.string)
        #expect(ann.wait { $0.contains(#""type":"driver","driver":"\#(annID)""#) })
        let (follower, _) = try join(b, "handover")
        for offset in 1...5 { ann.send(scroll(offset)) }
        #expect(follower.wait(for: hasOffset(5)), "\(follower.received.suffix(2))")
        let annSeq = try #require(states(follower).last?["seq"]?.double).map { Int($0) }!
        #expect(eventually { ((try? metricValue("scrollsync_redis_changes_sent_total{kind=\"led\"}", port: a.port)) ?? 0) >= 4 },
                "the lease holder's node publishes its driver's states itself")

        let (bob, bobWelcome) = try join(b, "handover", query: "role=presenter&name=Bob")
        let bobID = try #require(bobWelcome["you"]?.string)
        bob.send(#"{"type":"control","action":"take"}"#)
        #expect(follower.wait { $0.contains(#""type":"driver","driver":"\#(bobID)""#) })
        // Ann's node, late: a state by Ann published and written after the take.
        let late = #"{"type":"state","seq":\#(annSeq + 1),"offset":666,"viewport":10,"content":1000,"direction":"down","atTop":false,"atBottom":false,"by":"\#(annID)"}"#
        for command in [["PUBLISH", "scrollsync:{handover}", "S " + late],
                        ["HSET", "scrollsync:{handover}", "seq", String(annSeq + 1), "suf", String(late.drop { $0 != "," })]] {
            let result = try run("/usr/bin/env", ["redis-cli", "-p", String(redis.port)] + command, timeout: 20)
            try #require(result.status == 0, "\(command[0]): \(result.output)")
        }
        bob.send(scroll(7))
        #expect(follower.wait(for: hasOffset(7)), "\(follower.received.suffix(2))")
        #expect(ann.wait(for: hasOffset(7)), "\(ann.received.suffix(2))")
        // Ann's late state, heard while Bob had not moved: Bob's node orders that place again
        // under Bob (docs/cluster.md §7.12), another node takes it as Ann's last place while its
        // members know no driver (§7, seed 20131). Either way one state per seq, and a state by
        // Ann reaches a member who knows Bob as driver nowhere.
        var seen: [Int: Double] = [:]
        for connection in [follower, ann, bob] {
            var driver: String?
            for message in connection.received.compactMap({ try? JSON.parse($0) }) {
                if message["type"]?.string == "driver" { driver = message["driver"]?.string }
                guard message["type"]?.string == "state", let seq = message["seq"]?.double.map(Int.init),
                      let offset = message["offset"]?.double else { continue }
                #expect(seen[seq, default: offset] == offset, "seq \(seq): offsets \(seen[seq] ?? -1) and \(offset) (I1)")
                seen[seq] = offset
                #expect(message["by"]?.string != annID || driver != bobID, "a state by Ann while Bob drives (I5): \(connection.received.suffix(4))")
            }
        }
        let bobSeq = try #require(states(follower).last?["seq"]?.double).map { Int($0) }!
        #expect(bobSeq > annSeq + 1, "the new driver's first state leaps over the late one: \(annSeq) → \(bobSeq)")
        // A node that fetches the room now (its first member there) ends on Bob's state: from
        // the hash, or (written back once the room rests) from Bob's node, which it asks (and
        // which orders it again, one seq up).
        let c = try sharingNode(redis)
        let (onC, welcome) = try join(c, "handover")
        let newestOnC = {
            (welcome["state"]?["seq"]?.double ?? 0) >= Double(bobSeq) && welcome["state"]?["offset"]?.double == 7
                || self.states(onC).contains { ($0["seq"]?.double ?? 0) >= Double(bobSeq) && $0["offset"]?.double == 7 }
        }
        #expect(onC.wait { _ in newestOnC() } || newestOnC(), "\(welcome) \(onC.received.suffix(2))")
        bob.send(scroll(8))
        #expect(onC.wait(for: hasOffset(8)), "and follows from there: \(onC.received.suffix(2))")
    }

    /// The lease holder's node writes a room's state to Redis once it rests, at most once a
    /// second while it moves; a node that fetches the room in between asks it for the newest
    /// (`Q`), so a joiner there ends on the newest state although nobody scrolls again.
    @Test func aNodeThatFetchesTheRoomRightAfterABurstEndsOnTheNewestState() throws {
        let redis = try RedisServer()
        let (a, b) = (try sharingNode(redis), try sharingNode(redis))
        for round in 0..<3 {
            let room = "burst\(round)"
            let (presenter, welcome) = try join(a, room, query: "role=presenter")
            let me = try #require(welcome["you"]?.string)
            #expect(presenter.wait { $0.contains(#""type":"driver","driver":"\#(me)""#) })
            for offset in 1...30 { presenter.send(scroll(offset)) }
            #expect(presenter.wait(for: hasOffset(30)))
            let (follower, joined) = try join(b, room)
            let newest = { joined["state"]?["offset"]?.double == 30 || follower.received.contains(where: hasOffset(30)) }
            #expect(follower.wait { _ in newest() } || newest(), "round \(round): \(joined) \(follower.received.suffix(2))")
        }
    }

    @Test func messagesSentBeforeTheWelcomeAreKeptWhileTheRoomIsFetched() throws {
        let redis = try RedisServer.shared()
        let (a, b) = (try node(redis), try node(redis))
        let (follower, _) = try join(a, "early")
        // B does not hold the room: it fetches it first. The presenter does not wait for its welcome.
        let presenter = try RoomConnection(port: b.port, path: "/rooms/early?role=presenter")
        presenter.send(#"{"type":"document","name":"early.txt","format":"text","text":"sent before the welcome"}"#)
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        #expect(follower.wait { $0.contains("sent before the welcome") }, "the early document reaches A: \(follower.received)")
    }

    @Test func aWrongPresenterKeyIsRefusedOnEveryNode() throws {
        let redis = try RedisServer.shared()
        let (a, b) = (try node(redis), try node(redis))
        let (presenter, _) = try join(a, "keyed", query: "role=presenter&key=right")
        #expect(presenter.wait { $0.contains(#""type":"driver""#) })
        let intruder = try RoomConnection(port: b.port, path: "/rooms/keyed?role=presenter&key=wrong")
        #expect(intruder.wait { $0.contains(#""code":"unauthorized""#) }, "\(intruder.received)")
        let (ok, _) = try join(b, "keyed", query: "role=presenter&key=right")
        #expect(!ok.received.contains { $0.contains("unauthorized") })
    }

    @Test func killingTheDriversNodeMovesControlToItsPresenterOnAnotherNode() throws {
        let redis = try RedisServer.shared()
        let (a, b, c) = (try ServerProcess(["--redis", redis.url]), try node(redis), try node(redis))  // A dies: a process
        let (presenter, welcome) = try join(a, "handover", query: "role=presenter&key=k")
        let first = try #require(welcome["you"]?.string)
        #expect(presenter.wait { $0.contains(#""driver":"\#(first)""#) })
        let (follower, _) = try join(c, "handover")
        presenter.send(scroll(10))
        #expect(follower.wait(for: hasOffset(10)))

        kill(a.pid, SIGKILL)
        _ = a.child.wait(timeout: 10)
        // The presenter comes back on B (as the terminal client does, rotating URLs).
        let (again, rejoined) = try join(b, "handover", query: "role=presenter&key=k")
        let second = try #require(rejoined["you"]?.string)
        #expect(again.wait(timeout: 15) { $0.contains(#""type":"driver","driver":"\#(second)""#) },
                "control moves once the dead node's lease expires: \(again.received)")
        #expect(follower.wait { $0.contains(#""driver":"\#(second)""#) }, "followers on C hear it")
        again.send(scroll(20))
        #expect(follower.wait(for: hasOffset(20)), "\(follower.received.suffix(3))")
        let seqs = states(follower).compactMap { $0["seq"]?.double }
        #expect(seqs.count >= 2 && seqs.last! > seqs.first!, "seq keeps increasing across the handover: \(seqs)")
    }

    /// How many nodes subscribe to `room`'s channel.
    func subscribers(_ redis: RedisServer, _ room: String) throws -> Int? {
        let answer = try run("redis-cli", ["-p", String(redis.port), "--raw", "pubsub", "numsub", "scrollsync:{\(room)}"])
        return answer.output.split(separator: "\n").last.flatMap { Int($0) }
    }

    @Test func aNodeHearsOnlyTheRoomsItHoldsAndStopsWhenItForgetsOne() throws {
        let redis = try RedisServer()
        let (a, b, _) = (try node(redis), try node(redis), try node(redis))
        let (presenter, _) = try join(a, "held", query: "role=presenter&key=k")
        let (follower, _) = try join(b, "held")
        #expect(try subscribers(redis, "held") == 2, "the two nodes that hold the room, not the third")
        let patterns = try run("redis-cli", ["-p", String(redis.port), "--raw", "pubsub", "numpat"]).output
        #expect(patterns.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "no node subscribes to every room")
        // A room only followers joined is forgotten when they leave: its node stops hearing it.
        let (watcher, _) = try join(b, "unclaimed")
        #expect(try subscribers(redis, "unclaimed") == 1)
        watcher.client.send(maskedFrame(0x8, [0x03, 0xE8]))  // close 1000
        #expect(eventually { (try? subscribers(redis, "unclaimed")) == 0 }, "the node unsubscribed from the room it forgot")
        presenter.send(scroll(5))
        #expect(follower.wait(for: hasOffset(5)), "the held room is still shared")
    }

    @Test func roomsNeverLeakIntoEachOther() throws {
        let redis = try RedisServer.shared()
        let (a, b) = (try node(redis), try node(redis))
        let (one, _) = try join(a, "one", query: "role=presenter")
        let (two, _) = try join(b, "two", query: "role=presenter")
        let (followsOne, _) = try join(b, "one")
        let (followsTwo, _) = try join(a, "two")
        #expect(one.wait { $0.contains(#""type":"driver""#) } && two.wait { $0.contains(#""type":"driver""#) })
        for offset in [111, 112, 113] { one.send(scroll(offset)) }
        for offset in [221, 222, 223] { two.send(scroll(offset)) }
        #expect(followsOne.wait(for: hasOffset(113)) && followsTwo.wait(for: hasOffset(223)))
        // Markers published after everything above, on both rooms: once each follower has its
        // room's marker, a state that leaked from the other room would have come before it.
        one.send(scroll(114))
        two.send(scroll(224))
        #expect(followsOne.wait(for: hasOffset(114)) && followsTwo.wait(for: hasOffset(224)))
        #expect(states(followsOne).allSatisfy { ($0["offset"]?.double ?? 0) < 200 }, "\(followsOne.received)")
        #expect(states(followsTwo).allSatisfy { ($0["offset"]?.double ?? 0) > 200 }, "\(followsTwo.received)")
    }

    @Test func aRedisOutageLeavesEveryRoomConsistentWithOneDriver() throws {
        let redis = try RedisServer()
        let (a, b) = (try node(redis), try node(redis))
        let (presenterA, welcomeA) = try join(a, "outage", query: "role=presenter&key=k")
        let idA = try #require(welcomeA["you"]?.string)
        #expect(presenterA.wait { $0.contains(#""driver":"\#(idA)""#) })
        let (presenterB, welcomeB) = try join(b, "outage", query: "role=presenter&key=k")
        let idB = try #require(welcomeB["you"]?.string)
        let (followerA, _) = try join(a, "outage")
        let (followerB, _) = try join(b, "outage")
        presenterA.send(scroll(10))
        #expect(followerB.wait(for: hasOffset(10)))

        redis.stop()
        for node in [a, b] {
            #expect(eventually { (try? httpGet("/healthz", port: node.port))?.contains("redis: unavailable") == true }, "health says so")
            #expect(try metricValue("scrollsync_redis_up", port: node.port) == 0)
        }
        // Each node goes on alone: A's driver scrolls for A; on B, B's presenter takes control.
        presenterA.send(scroll(20))
        #expect(followerA.wait(for: hasOffset(20)), "a node keeps serving its rooms without Redis")
        presenterB.send(#"{"type":"control","action":"take"}"#)
        #expect(presenterB.wait { $0.contains(#""driver":"\#(idB)""#) })
        presenterB.send(scroll(30))
        #expect(followerB.wait(for: hasOffset(30)))

        try redis.start()
        for node in [a, b] {
            #expect(eventually { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true }, "reconnected")
        }
        // Once reconciled, both nodes welcome newcomers with the same state and one driver.
        var agreed: (driver: String, seq: Double)?
        #expect(try eventually {
            let (_, onA) = try join(a, "outage")
            let (_, onB) = try join(b, "outage")
            guard let driver = onA["driver"]?.string, driver == onB["driver"]?.string,
                  let seq = onA["state"]?["seq"]?.double, seq == onB["state"]?["seq"]?.double,
                  onA["state"]?["offset"]?.double == onB["state"]?["offset"]?.double else { return false }
            agreed = (driver, seq)
            return true
        }, "the nodes agree on state and driver; A's log:\n\(a.output.suffix(3000))\nB's log:\n\(b.output.suffix(3000))")
        let winner = try #require(agreed)
        #expect([idA, idB].contains(winner.driver))
        let (driving, other) = winner.driver == idA ? (presenterA, presenterB) : (presenterB, presenterA)
        #expect(other.wait { $0.contains(#""type":"driver","driver":"\#(winner.driver)""#) }, "the other presenter hears who drives")
        other.send(scroll(999))
        #expect(other.wait { $0.contains(#""code":"not_driver""#) }, "only one driver: \(other.received.suffix(2))")
        driving.send(scroll(40))
        for follower in [followerA, followerB] {
            #expect(follower.wait(for: hasOffset(40)), "\(follower.received.suffix(3))")
            #expect(!follower.received.contains { $0.contains(#""offset":999,"#) })
            let seqs = states(follower).compactMap { $0["seq"]?.double }
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "no follower sees seq go back: \(seqs)")
        }
        try expectEverythingSigned([a, b])
    }

    /// With `redis.secret`, no node refused what another published (all of it signed).
    func expectEverythingSigned(_ nodes: [any ServerNode]) throws {
        guard secret != nil else { return }
        for node in nodes { #expect(try metricValue("scrollsync_redis_refused_total{reason=\"unsigned\"}", port: node.port) == 0) }
    }

    /// After an outage in which one node got a step further than the other (its `seq` one
    /// above), whichever reconciles first, both end on one state under one `seq`: a node whose
    /// state is as new as the room's raises `seq` with the room's state rather than keep its own.
    @Test(arguments: 0..<3)
    func nodesThatDivergedByOneStepDuringAnOutageEndOnOneState(_ round: Int) throws {
        let redis = try RedisServer()
        let (a, b) = (try node(redis), try node(redis))
        let room = "diverge-\(round)"
        let (presenterA, welcomeA) = try join(a, room, query: "role=presenter&key=k")
        let idA = try #require(welcomeA["you"]?.string)
        #expect(presenterA.wait { $0.contains(#""driver":"\#(idA)""#) })
        let (presenterB, welcomeB) = try join(b, room, query: "role=presenter&key=k")
        let idB = try #require(welcomeB["you"]?.string)
        let (followerB, _) = try join(b, room)
        presenterA.send(scroll(10))
        #expect(followerB.wait(for: hasOffset(10)))
        redis.stop()
        for node in [a, b] {
            #expect(eventually { (try? httpGet("/healthz", port: node.port))?.contains("redis: unavailable") == true })
        }
        presenterA.send(scroll(20))
        #expect(presenterA.wait(for: hasOffset(20)))
        presenterB.send(#"{"type":"control","action":"take"}"#)
        #expect(presenterB.wait { $0.contains(#""driver":"\#(idB)""#) })
        presenterB.send(scroll(30))
        #expect(followerB.wait(for: hasOffset(30)))
        presenterB.send(scroll(31))
        #expect(followerB.wait(for: hasOffset(31)))
        try redis.start()
        #expect(try eventually {
            let (_, onA) = try join(a, room)
            let (_, onB) = try join(b, room)
            return onA["driver"]?.string != nil && onA["driver"]?.string == onB["driver"]?.string
                && onA["state"]?["seq"]?.double != nil && onA["state"]?["seq"]?.double == onB["state"]?["seq"]?.double
                && onA["state"]?["offset"]?.double == onB["state"]?["offset"]?.double
        }, "one state under one seq on both nodes; A's log:\n\(a.output.suffix(2000))\nB's log:\n\(b.output.suffix(2000))")
        try expectEverythingSigned([a, b])
    }

    @Test func aFrozenRedisIsNoticedAndTheRoomCatchesUpWhenItAnswersAgain() throws {
        let redis = try RedisServer()
        let (a, b) = (try node(redis), try node(redis))
        let (presenter, _) = try join(a, "frozen", query: "role=presenter")
        #expect(presenter.wait { $0.contains(#""type":"driver""#) })
        let (local, _) = try join(a, "frozen")
        let (remote, _) = try join(b, "frozen")
        presenter.send(scroll(10))
        #expect(remote.wait(for: hasOffset(10)))

        redis.freeze()
        defer { redis.thaw() }
        #expect(eventually(timeout: 20) { (try? httpGet("/healthz", port: a.port))?.contains("redis: unavailable") == true },
                "a Redis that stops answering is noticed")
        presenter.send(scroll(20))
        #expect(local.wait(for: hasOffset(20)), "the node serves its room alone meanwhile")

        redis.thaw()
        #expect(eventually(timeout: 20) { (try? httpGet("/healthz", port: a.port))?.contains("redis: up") == true })
        #expect(remote.wait(timeout: 15, for: hasOffset(20)),
                "the other node catches up on reconcile: \(places(remote)), on A: \(places(local)); A's log:\n\(a.output.suffix(1500))\nB's log:\n\(b.output.suffix(1500))")
        presenter.send(scroll(30))
        #expect(remote.wait(for: hasOffset(30)))
        let seqs = states(remote).compactMap { $0["seq"]?.double }
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "\(seqs)")
        #expect(try metricValue("scrollsync_redis_outages_total", port: a.port) >= 1)
    }
}

extension ClusterTests {
    /// A node that comes back after an outage while the lease holder's newest states are not
    /// in the room's hash yet (written back once the room rests; here not at all: the holder's
    /// user may not HSET) ends on the holder's newest state under the holder's `seq`: its merge
    /// asks for the newest, and the holder orders its state again above what the merge published.
    @Test func aNodeBackFromAnOutageEndsOnTheLeaseHoldersNewestStateNotYetWrittenBack() throws {
        let redis = try RedisServer()
        for user in ["nodea", "nodeb"] { try redis.cli(["ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all"]) }
        let a = try InProcessNode(redis: "redis://nodea:pw@127.0.0.1:\(redis.port)")
        let b = try InProcessNode(redis: "redis://nodeb:pw@127.0.0.1:\(redis.port)")
        for node in [a, b] {
            #expect(eventually { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true }, "\(node.output)")
        }
        let (presenter, welcome) = try join(a, "unwritten", query: "role=presenter")
        let me = try #require(welcome["you"]?.string)
        #expect(presenter.wait { $0.contains(#""type":"driver","driver":"\#(me)""#) })
        let (local, _) = try join(a, "unwritten")
        let (remote, _) = try join(b, "unwritten")
        presenter.send(scroll(10))
        #expect(remote.wait(for: hasOffset(10)))

        // B is cut off (its user may not log in; its connections are closed), and A's led
        // states no longer reach the room's hash.
        try redis.cli(["ACL", "SETUSER", "nodeb", "off"])
        try redis.cli(["CLIENT", "KILL", "USER", "nodeb"])
        #expect(eventually { (try? httpGet("/healthz", port: b.port))?.contains("redis: unavailable") == true })
        try redis.cli(["ACL", "SETUSER", "nodea", "-hset"])
        presenter.send(scroll(20))
        #expect(local.wait(for: hasOffset(20)))

        try redis.cli(["ACL", "SETUSER", "nodeb", "on"])
        #expect(eventually { (try? httpGet("/healthz", port: b.port))?.contains("redis: up") == true })
        #expect(remote.wait(timeout: 10, for: hasOffset(20)), "\(remote.received.suffix(3))")
        // One place under one seq: the node's last state is one A's members have too.
        let last = try #require(states(remote).last)
        #expect(last["offset"]?.double == 20, "\(last)")
        let seq = try #require(last["seq"]?.double)
        #expect(local.wait { $0.contains(#""seq":\#(Int(seq)),"#) && hasOffset(20)($0) }, "\(states(local).suffix(2)) vs \(last)")
        let seqs = states(remote).compactMap { $0["seq"]?.double }
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "\(seqs)")
    }
}

@Suite("Redis over TLS", .serialized)
struct RedisTLSTests {
    @Test func nodesShareRoomsThroughATLSRedisWhoseCertificateTheyVerify() throws {
        let redis = try RedisServer(tls: testCertificate)
        func trusted() throws -> InProcessNode {
            try InProcessNode {
                $0.redisURL = redis.url
                $0.redisCAFile = testCertificate.cert
            }
        }
        let (a, b) = (try trusted(), try trusted())
        for node in [a, b] {
            #expect(ClusterTests().eventually { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true },
                    "connected over TLS: \(node.output)")
        }
        let (presenter, _) = try ClusterTests().join(a, "tls", query: "role=presenter")
        let (follower, _) = try ClusterTests().join(b, "tls")
        #expect(presenter.wait { $0.contains(#""type":"driver""#) })
        presenter.send(ClusterTests().scroll(42))
        #expect(follower.wait(for: ClusterTests().hasOffset(42)), "\(follower.received)")

        // Without the CA the certificate is not trusted: the node says why and serves alone.
        let untrusting = try InProcessNode(redis: redis.url)
        #expect(ClusterTests().eventually { untrusting.log.all.contains { $0.contains("redis unavailable") && $0.contains("certificate is not trusted") } },
                "\(untrusting.output)")
        #expect(try httpGet("/healthz", port: untrusting.port).contains("redis: unavailable"))

        // A trusted certificate for another name (localhost, reached as 127.0.0.1) is refused too.
        let misnamed = try InProcessNode {
            $0.redisURL = "rediss://127.0.0.1:\(redis.port)"
            $0.redisCAFile = testCertificate.cert
        }
        #expect(ClusterTests().eventually {
            misnamed.log.all.contains { $0.contains("redis unavailable") && $0.contains("certificate is not trusted") && $0.contains("address mismatch") }
        }, "\(misnamed.output)")
    }

    /// Issue 19: a URL's ACL user is the user the node logs in as (`HELLO 3 AUTH user pw`),
    /// with the default user disabled; the default user, or a wrong password, is refused in words.
    @Test func nodesLogInAsTheURLsACLUser() throws {
        let redis = try RedisServer()
        for command in [["ACL", "SETUSER", "node", "on", ">s3cret", "~*", "&*", "+@all"], ["ACL", "SETUSER", "default", "off"]] {
            let result = try run("/usr/bin/env", ["redis-cli", "-p", String(redis.port)] + command, timeout: 20)
            try #require(result.status == 0 && result.output.contains("OK"), "\(command): \(result.output)")
        }
        let url = "redis://node:s3cret@127.0.0.1:\(redis.port)"
        let (a, b) = (try InProcessNode(redis: url), try InProcessNode(redis: url))
        for node in [a, b] {
            #expect(ClusterTests().eventually { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true }, "\(node.output)")
        }
        let (presenter, _) = try ClusterTests().join(a, "acl", query: "role=presenter")
        let (follower, _) = try ClusterTests().join(b, "acl")
        #expect(presenter.wait { $0.contains(#""type":"driver""#) })
        presenter.send(ClusterTests().scroll(7))
        #expect(follower.wait(for: ClusterTests().hasOffset(7)), "\(follower.received)")

        // A script (control: the join's claim, then this release) goes by SHA once the server
        // knows it; after SCRIPT FLUSH, NOSCRIPT sends it again (the take).
        let cli = ["redis-cli", "--no-auth-warning", "--user", "node", "--pass", "s3cret", "-p", String(redis.port)]
        presenter.send(#"{"type":"control","action":"release"}"#)
        #expect(follower.wait { $0.contains(#""type":"driver","driver":null"#) }, "\(follower.received.suffix(3))")
        let stats = try run("/usr/bin/env", cli + ["INFO", "commandstats"], timeout: 20).output
        #expect(stats.contains("cmdstat_evalsha:calls="), "\(stats)")
        #expect(try run("/usr/bin/env", cli + ["SCRIPT", "FLUSH"], timeout: 20).output.contains("OK"))
        let released = follower.received.count
        presenter.send(#"{"type":"control","action":"take"}"#)
        #expect(follower.wait { _ in follower.received.dropFirst(released).contains { $0.contains(#""type":"driver","driver":""#) } },
                "after SCRIPT FLUSH: \(follower.received.suffix(3))")
        presenter.send(ClusterTests().scroll(11))
        #expect(follower.wait(for: ClusterTests().hasOffset(11)), "\(follower.received.suffix(3))")

        for refused in ["redis://:s3cret@127.0.0.1:\(redis.port)", "redis://node:wrong@127.0.0.1:\(redis.port)"] {
            let node = try InProcessNode(redis: refused)
            #expect(ClusterTests().eventually { node.log.all.contains { $0.contains("redis unavailable") && $0.contains("WRONGPASS") } }, "\(node.output)")
            #expect(!node.output.contains("s3cret") && !node.output.contains("wrong@"), "no password in the log")
        }
    }

}

@Suite("Terminal clients across nodes", .serialized)
struct ClusterClientTests {
    @Test func presenterAndFollowerMoveToOtherNodesWhenTheirsDies() throws {
        let redis = try RedisServer.shared()
        let (a, b, c) = (try ServerProcess(["--redis", redis.url]), try ServerProcess(["--redis", redis.url]), try ServerProcess(["--redis", redis.url]))
        let room = "/rooms/nodes-\(UUID().uuidString.prefix(6))"
        let binary = ServerProcess.binary.path
        let presenter = try Tmux([binary, "present", a.url + room, TerminalClientTests.document, "--name", "Ann", "--also", b.url + room],
                                 width: 100, height: 30)
        let follower = try Child(binary, ["follow", a.url + room, c.url + room, "--json"], errors: .discard)
        defer { follower.stop() }
        presenter.wait { $0.statusLine.contains("PRESENTING") && $0.statusLine.contains("● live") && $0.statusLine.contains("1 follower") }

        func offsets() -> [Double] {
            follower.lines.compactMap { try? JSON.parse($0) }.compactMap { $0["offset"]?.double }
        }
        try presenter.keys("n")
        #expect(follower.waitForOutput(timeout: 10) { _ in !offsets().isEmpty }, "the follower on A sees the presenter on A")
        let before = offsets().last ?? 0

        kill(a.pid, SIGKILL)
        _ = a.child.wait(timeout: 10)
        // Both clients rotate to their next URL; the presenter drives again from B once the
        // dead node's lease expires, and its next move reaches the follower, now on C.
        var moved = false
        let deadline = Date().addingTimeInterval(30)
        while !moved && Date() < deadline {
            try presenter.keys("n")
            moved = follower.waitForOutput(timeout: 1) { _ in (offsets().last ?? 0) > before }
        }
        #expect(moved, "after A died: presenter \(presenter.screen.statusLine); follower \(follower.lines.suffix(3))")
        #expect(follower.isRunning)
    }
}

@Suite("Redis URLs")
struct RedisURLTests {
    @Test func urlsNameHostPortDatabaseAndPassword() throws {
        #expect(try RedisEndpoint(url: "redis://10.0.0.5") == RedisEndpoint(host: "10.0.0.5"))
        #expect(try RedisEndpoint(url: "redis://cache:6380/2") == RedisEndpoint(host: "cache", port: 6380, database: 2))
        #expect(try RedisEndpoint(url: "redis://:s3cret@cache:6380") == RedisEndpoint(host: "cache", port: 6380, password: "s3cret"))
        #expect(try RedisEndpoint(url: "redis://user:pw@[::1]:7000/0") == RedisEndpoint(host: "::1", port: 7000, user: "user", password: "pw"))
        #expect(try RedisEndpoint(url: "redis://user:pw@cache").description == "redis://user:***@cache:6379/0", "the user, not the password")
        #expect(try RedisEndpoint(url: "redis://:s3cret@cache:6380").description == "redis://:***@cache:6380/0", "no password in logs")
        #expect(try RedisEndpoint(url: "rediss://cache.example:6380/1") == RedisEndpoint(host: "cache.example", port: 6380, database: 1, tls: true))
    }

    @Test(arguments: [
        ("http://cache:6379", "starts with redis://"),
        ("redis://cache:99999", "port in a Redis URL is 1-65535"),
        ("redis://cache:6379/x", "database in a Redis URL is a number"),
        ("redis://:6379", "needs a host"),
    ])
    func badURLsSayWhatIsWrong(_ url: String, _ message: String) {
        #expect(throws: RedisError.self) { try RedisEndpoint(url: url) }
        do { _ = try RedisEndpoint(url: url) } catch { #expect(error.description.contains(message), "\(error)") }
    }
}

/// Rooms spread over two Redis servers (issue 30.4: capacity that grows with Redis instances):
/// each room lives on one shard, picked the same way by every node; rooms on both shards are
/// shared across nodes; a shard going away is said in /healthz and /metrics.
@Suite("Rooms sharded over several Redis servers", .serialized)
struct ShardedClusterTests {
    static func keys(_ redis: RedisServer) throws -> Set<String> {
        let listed = try run("redis-cli", ["-p", String(redis.port), "--raw", "keys", "scrollsync:{*"])
        return Set(listed.output.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /scrollsync:\{([^}]+)\}/).map { String($0.1) }
        })
    }

    @Test func roomsSpreadOverTwoRedisServersAndEveryNodeFindsThemAlike() throws {
        let (first, second) = (try RedisServer(), try RedisServer())
        let (a, b) = (try InProcessNode(redis: first.url, shards: [second.url]), try InProcessNode(redis: first.url, shards: [second.url]))
        let cluster = ClusterTests()
        let rooms = (0..<10).map { "shard-\($0)" }
        let pairs = try cluster.drivenRooms(rooms, presentersOn: a, followersOn: b)
        let onFirst = try Self.keys(first), onSecond = try Self.keys(second)
        #expect(onFirst.union(onSecond) == Set(rooms), "every room is kept: \(onFirst) \(onSecond)")
        #expect(onFirst.isDisjoint(with: onSecond), "each room on one shard")
        #expect(!onFirst.isEmpty && !onSecond.isEmpty, "both shards hold rooms: \(onFirst) \(onSecond)")
        #expect(try metricValue(#"scrollsync_redis_shards{state="configured"}"#, port: a.port) == 2)
        #expect(try httpGet("/healthz", port: b.port).contains("redis: up"))

        second.stop()
        #expect(cluster.eventually { (try? httpGet("/healthz", port: a.port))?.contains("redis: unavailable (1 of 2 shards: ") == true },
                "\((try? httpGet("/healthz", port: a.port)) ?? "")")
        #expect(try metricValue("scrollsync_redis_up", port: a.port) == 0)
        try second.start()
        #expect(cluster.eventually { (try? httpGet("/healthz", port: a.port))?.contains("redis: up") == true }, "both shards again")
        // After the outage the rooms are shared again, on the same shards.
        let room = try #require(onSecond.sorted().first)
        let index = try #require(rooms.firstIndex(of: room))
        let (presenter, follower) = pairs[index]
        #expect(cluster.eventually {
            presenter.send(cluster.scroll(77))
            return follower.wait(timeout: 1, for: cluster.hasOffset(77))
        }, "\(room) is shared again after its shard came back: \(follower.received.suffix(2))")
        withExtendedLifetime(pairs) {}
    }
}
