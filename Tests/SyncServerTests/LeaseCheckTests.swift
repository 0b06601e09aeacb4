import Logging
import RedisClient
import RoomKit
import Synchronization
import Testing
import Transport
@testable import Cluster

/// `inherit` (every second) and `lapse` (every 5 s) are asked for each room driven from another
/// node: a plain `EXISTS` of the lease comes first, and the `control` script runs only once the
/// lease is gone (docs/cluster.md §7.6).
@Suite("Inherit and lapse check the lease first")
struct LeaseCheckTests {
    static let ms: UInt64 = 1_000_000
    static let room = "lc"
    static let ann = "00000000000000a1", bob = "00000000000000b2"

    final class Outcome: @unchecked Sendable {
        var result: EngineResult?
    }

    /// Runs `action` and advances the loop until it is answered.
    func control(_ engine: RedisRoomEngine, _ loop: EventLoop, _ action: ControlAction) -> EngineResult? {
        let outcome = Outcome()
        engine.control(room: Self.room, action) { outcome.result = $0 }
        for _ in 0..<100 where outcome.result == nil { loop.advance(to: loop.now + 5 * Self.ms) }
        return outcome.result
    }

    func refused(_ result: EngineResult?) -> Bool {
        if case .refused = result { true } else { false }
    }

    @Test func aLiveLeaseIsNeitherInheritedNorLapsedAndNoScriptRuns() throws {
        let node = try SimEngine(seed: 2)
        let (loop, redis, engine) = (node.loop, node.redis, node.engine)
        #expect(engine.isAvailable)
        let hash = RedisRoomEngine.roomKey(Self.room)
        #expect(control(engine, loop, .take(session: Self.bob, name: nil)) != nil)
        let scripts = engine.statistics.scriptedChanges.load(ordering: .relaxed)

        #expect(refused(control(engine, loop, .inherit(session: Self.ann, name: nil, stale: Self.bob))))
        #expect(refused(control(engine, loop, .lapse(stale: Self.bob))))
        #expect(engine.statistics.scriptedChanges.load(ordering: .relaxed) == scripts, "no script while Bob's lease lives")
        #expect(redis.strings[hash + ":lease"] == Array(Self.bob.utf8))

        // Bob's node died: the lease expired. Now the script runs, and Ann inherits.
        redis.del(hash + ":lease")
        guard case .ordered = control(engine, loop, .inherit(session: Self.ann, name: nil, stale: Self.bob)) else {
            Issue.record("the inherit was not ordered")
            return
        }
        #expect(engine.statistics.scriptedChanges.load(ordering: .relaxed) == scripts + 1)
        #expect(redis.strings[hash + ":lease"] == Array(Self.ann.utf8))
        node.stop()
    }

    /// The holder's node renews its lease every second, and the room's hash only every eighth
    /// of the hash's idle time (60 s here: 7.5 s; 75 s by default), which keeps it alive with far
    /// fewer `PEXPIRE`s; a room that left the node and came back is renewed at once.
    @Test func theHashIsRenewedOnlyEveryEighthOfItsIdleTime() throws {
        let node = try SimEngine(seed: 3)
        let (loop, redis, engine) = (node.loop, node.redis, node.engine)
        #expect(engine.isAvailable)
        guard case .ordered? = control(engine, loop, .take(session: Self.ann, name: nil)) else { Issue.record("the take"); return }
        let hash = RedisRoomEngine.roomKey(Self.room), lease = hash + ":lease"
        func renew() -> EngineResult? { control(engine, loop, .renew(session: Self.ann)) }
        #expect(renew().map { if case .done = $0 { true } else { false } } == true)
        let renewedAt = try #require(redis.expiry[hash])
        for _ in 0..<6 {
            loop.advance(to: loop.now + 1_000 * Self.ms)
            let leaseBefore = redis.expiry[lease]
            _ = renew()
            #expect(redis.expiry[lease] != leaseBefore, "the lease every second")
            #expect(redis.expiry[hash] == renewedAt, "not the hash")
        }
        loop.advance(to: loop.now + 1_500 * Self.ms)
        _ = renew()
        #expect(try #require(redis.expiry[hash]) > renewedAt + 7_000 * Self.ms, "the hash after 7.5 s")
        let latest = redis.expiry[hash]
        engine.detach(room: Self.room)
        loop.advance(to: loop.now + 10 * Self.ms)
        _ = renew()
        #expect(redis.expiry[hash] != latest, "a room that left and came back: at once")
        node.stop()
    }
}
