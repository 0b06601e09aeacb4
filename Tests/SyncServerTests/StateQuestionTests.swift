import Foundation
import ScrollModel
import Testing
@testable import SyncServer

/// A node that fetches a room asks the others for its newest state (`Q`). Every node answered
/// every question, so answers grew with the questions times the nodes (issue 46.7: 120,000 `Q`
/// gave 166,000 `S` over three nodes); a node that does not lead the room now answers a room's
/// questions at most once per 250 ms.
@Suite("Answers to a state question", .serialized)
struct StateQuestionTests {
    let cluster = ClusterTests()

    func led(_ node: any ServerNode) -> Double {
        (try? metricValue(#"scrollsync_redis_changes_sent_total{kind="led"}"#, port: node.port)) ?? -1
    }

    /// 300 questions at once on room `asked`, from a node that does not exist (a PUBLISH is all
    /// it takes), heard by `node`: the seconds from the first sent to the last heard.
    func ask(_ redis: RedisServer, heardBy node: any ServerNode) throws -> Double {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("questions-\(UUID().uuidString)")
        try String(repeating: "PUBLISH scrollsync:{asked} \"Q 00000000000000aa\"\n", count: 300).write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let heard = { (try? metricValue("scrollsync_redis_messages_total", port: node.port)) ?? 0 }
        let before = heard()
        let start = Date()
        let sent = try run("/bin/sh", ["-c", "redis-cli -p \(redis.port) < \(script.path)"], timeout: 60)
        #expect(sent.status == 0, "\(sent.output)")
        // The questions have been heard once the node's messages counter has taken them all.
        #expect(cluster.eventually { heard() >= before + 300 }, "the node heard the questions")
        return Date().timeIntervalSince(start)
    }

    @Test func aNodeThatDoesNotLeadAnswersABurstOfQuestionsAFewTimes() throws {
        let redis = try RedisServer()
        let forged = ForgedRedisTests()
        let (a, b) = (try forged.node(redis), try forged.node(redis))
        let (presenter, follower, _) = try forged.room("asked", a, b)
        withExtendedLifetime((presenter, follower)) {}
        let before = led(b)
        #expect(before >= 0)
        _ = try ask(redis, heardBy: b)
        let answers = led(b) - before
        #expect(answers >= 1, "it still answers")
        #expect(answers <= 20, "node b answered \(answers) of 300 questions (at most one per 250 ms)")
    }

    /// The lease holder's node answered the first question of an interval by ordering its
    /// driver's place again, then every later one by passing its state on: one `S` per `Q`
    /// (audit-46: 3,000 `Q` drew 3,002 `S`). Now at most two answers per 250 ms (one at
    /// once, one at the interval's end) and the ordering that starts the next.
    @Test func theLeaseHoldersNodeAnswersABurstOfQuestionsAFewTimes() throws {
        let redis = try RedisServer()
        let forged = ForgedRedisTests()
        let (a, b) = (try forged.node(redis), try forged.node(redis))
        let (presenter, follower, _) = try forged.room("asked", a, b)
        let before = led(a)
        #expect(before >= 0)
        let seconds = try ask(redis, heardBy: a)
        let intervals = (seconds / 0.25).rounded(.up) + 1
        let answers = led(a) - before
        #expect(answers >= 1, "it still answers")
        #expect(answers <= 2 * intervals + 1, "node a answered \(answers) of 300 questions in \(seconds) s (at most two per 250 ms)")
        // The room still works: the driver moves on and the follower sees it.
        presenter.send(cluster.scroll(30))
        #expect(follower.wait(for: cluster.hasOffset(30)), "\(follower.received.suffix(2))")
    }
}
