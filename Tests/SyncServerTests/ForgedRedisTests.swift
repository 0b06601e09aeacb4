import Foundation
import Operations
import ScrollModel
import Testing
@testable import SyncServer

/// A client of the shared Redis that can only PUBLISH (and read a room's `ver`), against
/// nodes on a real redis-server (issue 44.4): a control change the lease does not confirm is
/// refused, a version already held with other content fetches the room again, and with
/// `redis.secret` what is not signed is refused.
@Suite("Forged changes on a room's channel", .serialized)
struct ForgedRedisTests {
    let cluster = ClusterTests()
    static let secret = String(repeating: "s3cr3t-", count: 6)

    func metric(_ node: any ServerNode, _ name: String) -> Double {
        (try? metricValue(name, port: node.port)) ?? -1
    }

    func refused(_ node: any ServerNode, _ reason: String) -> Double {
        metric(node, "scrollsync_redis_refused_total{reason=\"\(reason)\"}")
    }

    /// The room's version in Redis (what SUBSCRIBE or HGET shows anyone).
    func version(_ redis: RedisServer, _ room: String) throws -> Int {
        let answer = try run("/usr/bin/env", ["redis-cli", "-p", String(redis.port), "HGET", "scrollsync:{\(room)}", "ver"], timeout: 20)
        return try #require(Int(answer.output.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    func node(_ redis: RedisServer, secret: String? = nil) throws -> any ServerNode {
        let node = try InProcessNode {
            $0.redisURL = redis.url
            $0.redisSecret = secret
        }
        guard cluster.eventually(timeout: 15, { (try? httpGet("/healthz", port: node.port))?.contains("redis: up") == true }) else {
            throw Failure("node on port \(node.port) did not connect to Redis: \(node.output)")
        }
        return node
    }

    /// A presenter (Ann, the driver) on `a`, a follower on `b` that has seen offset 10.
    func room(_ name: String, _ a: any ServerNode, _ b: any ServerNode) throws -> (presenter: RoomConnection, follower: RoomConnection, me: String) {
        let (presenter, welcome) = try cluster.join(a, name, query: "role=presenter&key=k&name=Ann")
        let me = try #require(welcome["you"]?.string)
        guard presenter.wait(for: { $0.contains(#""type":"driver","driver":"\#(me)""#) }) else { throw Failure("no lease: \(presenter.received)") }
        let (follower, _) = try cluster.join(b, name)
        presenter.send(cluster.scroll(10))
        guard follower.wait(for: cluster.hasOffset(10)) else { throw Failure("the room does not work: \(follower.received)") }
        return (presenter, follower, me)
    }

    @Test func aForgedDriverChangeIsRefusedAndTheRealDriverKeepsDriving() throws {
        let redis = try RedisServer()
        let (a, b) = (try node(redis), try node(redis))
        let (presenter, follower, _) = try room("forged1", a, b)
        let next = try version(redis, "forged1") + 1
        try redis.cli(["PUBLISH", "scrollsync:{forged1}", #"\#(next) {"type":"driver","driver":"00000000deadbeef","name":"Mallory"}"#])
        let mallory = { (connection: RoomConnection) in connection.received.contains { $0.contains("Mallory") } }
        #expect(cluster.eventually { (refused(a, "unconfirmed") >= 1 && refused(b, "unconfirmed") >= 1) || mallory(follower) || mallory(presenter) },
                "every node hears it")
        #expect(!mallory(follower) && !mallory(presenter), "nobody is told Mallory drives: \(follower.received.suffix(2))")
        presenter.send(cluster.scroll(20))
        #expect(follower.wait(for: cluster.hasOffset(20)), "the real driver still drives: \(presenter.received.suffix(2))")
        #expect(!presenter.received.contains { $0.contains("not_driver") })
        #expect(refused(a, "unconfirmed") == 1 && refused(b, "unconfirmed") == 1, "counted once on each node")
    }

    /// A no-op driver change under the next version (naming the real driver) took that version
    /// on every node, and the room's next real change (a document, under the same version)
    /// was dropped everywhere unseen.
    @Test func aNoOpDriverChangeUnderTheNextVersionCannotHideTheNextRealChange() throws {
        let redis = try RedisServer()
        let (a, b) = (try node(redis), try node(redis))
        let (presenter, follower, me) = try room("forged2", a, b)
        let next = try version(redis, "forged2") + 1
        try redis.cli(["PUBLISH", "scrollsync:{forged2}", #"\#(next) {"type":"driver","driver":"\#(me)","name":"Ann"}"#])
        _ = cluster.eventually(timeout: 5) { refused(a, "unconfirmed") >= 1 && refused(b, "unconfirmed") >= 1 }  // (old code: nothing to see)
        presenter.send(#"{"type":"document","name":"talk.md","format":"markdown","text":"Real talk"}"#)
        #expect(follower.wait { $0.contains(#""type":"document""#) && $0.contains("Real talk") },
                "the document reaches the follower on the other node: \(follower.received.suffix(2))")
        #expect(refused(b, "unconfirmed") == 1)
    }

    /// A valid change forged under the next version is taken (without a secret a publisher
    /// can send valid changes); the real change under the same version then makes every node
    /// fetch the room again, counted, instead of dropping it.
    @Test func aVersionHeldWithOtherContentFetchesTheRoomAgain() throws {
        let redis = try RedisServer()
        let (a, b) = (try node(redis), try node(redis))
        let (presenter, follower, me) = try room("forged3", a, b)
        let next = try version(redis, "forged3") + 1
        // Above the room's seq (which counts from the wall clock in a cluster), within a leap.
        let seq = try #require(cluster.states(follower).last?["seq"]?.double).rounded() + 876
        let forged = #"\#(next) {"type":"state","seq":\#(Int(seq)),"offset":15,"viewport":10,"content":1000,"direction":"down","atTop":false,"atBottom":false,"by":"\#(me)"}"#
        try redis.cli(["PUBLISH", "scrollsync:{forged3}", forged])
        #expect(follower.wait(for: cluster.hasOffset(15)), "taken: a valid change")
        presenter.send(#"{"type":"document","name":"talk.md","format":"markdown","text":"Real talk"}"#)
        #expect(follower.wait { $0.contains(#""type":"document""#) && $0.contains("Real talk") },
                "the real change under the same version reaches the follower: \(follower.received.suffix(2))")
        #expect(metric(b, "scrollsync_redis_refetch_total") >= 1, "the room was fetched again, counted")
        #expect(refused(b, "implausible") >= 1)
    }

    /// With `redis.secret`, nodes sign what they publish (states, control, documents, counts)
    /// and refuse what is not signed, or signed with another secret.
    @Test func withASecretNodesWorkTogetherAndRefuseWhatIsNotSigned() throws {
        let redis = try RedisServer()
        let (a, b) = (try node(redis, secret: Self.secret), try node(redis, secret: Self.secret))
        let (presenter, follower, me) = try room("signed", a, b)
        presenter.send(#"{"type":"document","name":"talk.md","format":"markdown","text":"Signed talk"}"#)
        #expect(follower.wait { $0.contains("Signed talk") }, "a document (a script's change) goes across: \(follower.received.suffix(2))")
        let state = #"{"type":"state","seq":5000,"offset":777,"viewport":10,"content":1000,"direction":"down","atTop":false,"atBottom":false,"by":"\#(me)"}"#
        let next = try version(redis, "signed") + 1
        let forged = [
            "S " + state,
            "\(next) " + state,
            "!" + String(repeating: "0", count: 64) + " S " + state,
            "!" + String(repeating: "0", count: 40) + " \(next) " + state,
            "P 00000000000000aa 5 5 0",
        ]
        for payload in forged { try redis.cli(["PUBLISH", "scrollsync:{signed}", payload]) }
        #expect(cluster.eventually { refused(b, "unsigned") >= Double(forged.count) }, "refused: \(refused(b, "unsigned"))")
        presenter.send(cluster.scroll(30))
        #expect(follower.wait(for: cluster.hasOffset(30)), "the real driver still reaches the other node")
        #expect(!follower.received.contains { $0.contains(#""offset":777"#) }, "nothing unsigned is taken")
        let (late, welcome) = try cluster.join(b, "signed", query: "role=presenter&key=k&name=Bob")
        _ = late
        #expect(welcome["presence"]?["followers"]?.double == 1, "no forged counts: \(welcome)")
        #expect(refused(a, "unconfirmed") == 0 && refused(b, "implausible") == 0, "signed traffic passes every check")
    }

    /// After an outage, nodes merge what they did alone (the reconcile script publishes
    /// control, documents, states and keys): signed as every other change.
    @Test func withASecretNodesReconcileAfterAnOutage() throws {
        let signed = ClusterTests(secret: Self.secret)
        try signed.aRedisOutageLeavesEveryRoomConsistentWithOneDriver()
        try signed.nodesThatDivergedByOneStepDuringAnOutageEndOnOneState(0)
        try signed.followersOnOtherNodesSeeEveryStateInOrderAndLateJoinersGetStateAndDocument()
        try signed.aPresenterKeyPutBackByAMergeReachesANodeThatFetchedTheRoomBefore()  // its `key` change signed
        try signed.aKeyBoundOnOneNodeIsRequiredOnANodeThatHeldTheRoomKeyless()  // and a binding's
    }

    @Test func configCheckAndStartUpSayWhenRedisIsSharedWithoutASecret() throws {
        var configuration = ServerConfiguration()
        configuration.redisURL = "redis://127.0.0.1:1"
        #expect(ConfigurationWarnings.of(configuration).contains { $0.contains("redis.secret") })
        configuration.redisSecret = Self.secret
        #expect(!ConfigurationWarnings.of(configuration).contains { $0.contains("redis.secret") })
        configuration.redisSecret = "short"
        #expect(throws: ConfigurationError.self) { try Settings.validate(configuration) }
        let redis = try RedisServer()
        let unsigned = try node(redis)
        #expect(unsigned.output.contains("without redis.secret"))
        let signed = try node(redis, secret: Self.secret)
        #expect(!signed.output.contains("without redis.secret"))
    }
}
