import Foundation
import Operations
import ScrollModel
@testable import SyncServer
import Testing

/// Control and claims across nodes as on one node (docs/cluster.md, divergences 3 and 4).
extension ClusterTests {
    /// A node sharing rooms through `redis`, with `adjust` applied to its configuration, once
    /// it reaches Redis.
    func sharingNode(_ redis: RedisServer, _ adjust: @escaping (inout ServerConfiguration) -> Void) throws -> any ServerNode {
        let node = try InProcessNode {
            $0.redisURL = redis.url
            $0.redisSecret = secret
            adjust(&$0)
        }
        guard eventually(timeout: 15, { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true }) else {
            throw Failure("node on port \(node.port) did not connect to Redis: \(node.output)")
        }
        return node
    }

    /// Divergence 4: rooms a follower created on B and that are driven only from A are claimed
    /// on B too, so they do not hold B's `limits.unclaimedRoomsPerAddress` for the follower's
    /// address (before: every such room stayed unclaimed on B, and B refused new ones 429).
    @Test func roomsDrivenFromAnotherNodeDoNotCountAsUnclaimedHere() throws {
        let redis = try RedisServer()
        let a = try sharingNode(redis) { _ in }
        let b = try sharingNode(redis) {
            $0.limits.unclaimedRoomsPerAddress = 3
            $0.limits.roomCreationsPerMinute = 0
        }
        var open: [RoomConnection] = []
        for index in 0..<3 {
            let (follower, _) = try join(b, "first\(index)")
            open.append(follower)
        }
        let over = try RoomConnection(port: b.port, path: "/rooms/over")
        #expect(over.status.contains(" 429 "), "the limit holds for rooms nobody drives: \(over.answer)")
        for index in 0..<3 {
            let (presenter, _) = try join(a, "first\(index)", query: "role=presenter")
            presenter.send(scroll(index + 1))
            #expect(open[index].wait(for: hasOffset(index + 1)), "driven from A: \(open[index].received.suffix(2))")
            open.append(presenter)
        }
        for index in 0..<3 {
            let follower = try RoomConnection(port: b.port, path: "/rooms/more\(index)")
            #expect(follower.status.contains(" 101 "), "room \(index): the rooms driven from A are claimed on B: \(follower.answer)")
            open.append(follower)
        }
        let again = try RoomConnection(port: b.port, path: "/rooms/over")
        #expect(again.status.contains(" 429 "), "the new follower-first rooms count: \(again.answer)")
    }

    /// Divergence 3: a presenter on another node than the driver's sends `take` and at once a
    /// scroll (one write, not waiting for the `driver` message): the scroll is applied, as on
    /// one node, on every node (before: refused `not_driver`, 8 of 8). Control goes back and
    /// forth, so each round the take comes from the other node.
    @Test func aScrollRightAfterTakeIsAppliedOnEveryNode() throws {
        let redis = try RedisServer.shared()
        let (a, b) = (try sharingNode(redis) { _ in }, try sharingNode(redis) { _ in })  // both reach Redis first
        let (ann, annWelcome) = try join(a, "takeScroll", query: "role=presenter&name=Ann")
        #expect(annWelcome["driver"]?.string != nil && annWelcome["driver"] == annWelcome["you"], "the first presenter drives: \(annWelcome)")
        let (bob, _) = try join(b, "takeScroll", query: "role=presenter&name=Bob")
        let (onA, _) = try join(a, "takeScroll")
        let (onB, _) = try join(b, "takeScroll")
        for round in 1...6 {
            let taker = round % 2 == 1 ? bob : ann
            // One write: the node reads both before anything comes back from Redis.
            taker.client.send(maskedFrame(0x1, Array(#"{"type":"control","action":"take"}"#.utf8)) + maskedFrame(0x1, Array(scroll(round * 10).utf8)))
            for follower in [onA, onB] {
                #expect(follower.wait(for: hasOffset(round * 10)), "round \(round): the scroll after take is applied: \(follower.received.suffix(3))")
            }
        }
        for presenter in [ann, bob] {
            #expect(!presenter.received.contains { $0.contains(#""type":"error""#) }, "nothing refused: \(presenter.received.filter { $0.contains("error") })")
        }
    }

    /// Divergence 3: the first presenter of a shared room (new, or held elsewhere by followers
    /// only) gets a welcome that names it driver, so a raw client's first scroll, sent right
    /// after the welcome, is applied (before: `driver` null, the claim still on its way).
    @Test func aSharedRoomsFirstPresenterIsWelcomedAsItsDriver() throws {
        let redis = try RedisServer.shared()
        let (a, b) = (try sharingNode(redis) { _ in }, try sharingNode(redis) { _ in })  // both reach Redis first
        for (index, room) in ["firstNew", "firstHeld"].enumerated() {
            var followers: [RoomConnection] = []
            if room == "firstHeld" { followers.append(try join(a, room).0) }
            let (presenter, welcome) = try join(b, room, query: "role=presenter&name=P")
            let me = try #require(welcome["you"]?.string)
            #expect(welcome["driver"]?.string == me, "\(room): the welcome names the first presenter driver: \(welcome)")
            #expect(welcome["driverName"]?.string == "P")
            #expect(presenter.wait { $0.contains(#""type":"driver","driver":"\#(me)""#) }, "and the driver message after it, as on one node")
            followers.append(try join(b, room).0)
            presenter.send(scroll(index + 5))
            for follower in followers {
                #expect(follower.wait(for: hasOffset(index + 5)), "\(room): its first scroll is applied: \(follower.received.suffix(2))")
            }
            #expect(!presenter.received.contains { $0.contains(#""type":"error""#) }, "\(presenter.received)")
        }
    }
}
