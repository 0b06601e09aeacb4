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

    @Test func aNodeThatDoesNotLeadAnswersABurstOfQuestionsAFewTimes() throws {
        let redis = try RedisServer()
        let forged = ForgedRedisTests()
        let (a, b) = (try forged.node(redis), try forged.node(redis))
        let (presenter, follower, _) = try forged.room("asked", a, b)
        withExtendedLifetime((presenter, follower)) {}
        let before = led(b)
        #expect(before >= 0)
        // 300 questions at once, from a node that does not exist (a PUBLISH is all it takes).
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("questions-\(UUID().uuidString)")
        try String(repeating: "PUBLISH scrollsync:{asked} \"Q 00000000000000aa\"\n", count: 300).write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let sent = try run("/bin/sh", ["-c", "redis-cli -p \(redis.port) < \(script.path)"], timeout: 60)
        #expect(sent.status == 0, "\(sent.output)")
        // The questions have been heard once node b's messages counter has taken them all.
        let heard = { (try? metricValue("scrollsync_redis_messages_total", port: b.port)) ?? 0 }
        #expect(cluster.eventually { heard() >= 300 }, "node b heard the questions")
        let answers = led(b) - before
        #expect(answers >= 1, "it still answers")
        #expect(answers <= 20, "node b answered \(answers) of 300 questions (at most one per 250 ms)")
    }
}
