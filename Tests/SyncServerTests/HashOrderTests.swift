import Foundation
import Logging
import RedisClient
import ScrollModel
import Testing
import Transport
@testable import Cluster
import RoomKit
@testable import SyncServer

/// docs/cluster.md I4: the room's hash's `seq` never goes back. An old lease holder's led
/// state, written back 250 ms late, used to land over the new holder's (issue 46.2).
@Suite("The room's hash only moves forward")
struct HashOrderTests {
    func hashSeq(_ redis: RedisServer, _ room: String) throws -> String {
        try run("/usr/bin/env", ["redis-cli", "-p", String(redis.port), "HGET", "scrollsync:{\(room)}", "seq"], timeout: 20).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let ann = "00000000000000a1", bob = "00000000000000b2"

    func state(_ seq: Int, by: String = ann) -> [UInt8] { Array(#"{"type":"state","seq":\#(seq),"offset":\#(seq),"by":"\#(by)"}"#.utf8) }

    /// Runs `action` on the engine and waits for Redis's answer.
    func control(_ engine: RedisRoomEngine, _ action: ControlAction) {
        let answered = DispatchSemaphore(value: 0)
        engine.control(room: "order", action) { _ in answered.signal() }
        #expect(answered.wait(timeout: .now() + 15) == .success)
    }

    @Test func aLateWriteBackBelowTheHashsSeqIsNotWritten() throws {
        let redis = try RedisServer()
        try withEngine(on: redis) { engine in
            control(engine, .take(session: Self.ann, name: nil))
            // The new holder's state (a hand-over leaps 1,024) is in the hash.
            engine.publish(led: state(2069), seq: 2069, by: Self.ann, room: "order", keep: true)
            #expect(eventually(timeout: 15) { (try? hashSeq(redis, "order")) == "2069" })

            // The old holder's last state, written back after it: a control change writes back at
            // once, before its script, so once it is answered the write has run.
            engine.publish(led: state(1037), seq: 1037, by: Self.ann, room: "order", keep: true)
            control(engine, .release(session: "nobody"))
            #expect((try? hashSeq(redis, "order")) == "2069", "the hash kept the newer state")

            // A newer state still moves it on.
            engine.publish(led: state(2070), seq: 2070, by: Self.ann, room: "order", keep: true)
            #expect(eventually(timeout: 15) { (try? hashSeq(redis, "order")) == "2070" })
        }
    }

    /// Divergence 2: a state of a driver who lost the lease is never written, even above the
    /// hash's `seq`.
    @Test func aStateOfADriverWhoLostTheLeaseIsNotWritten() throws {
        let redis = try RedisServer()
        try withEngine(on: redis) { engine in
            control(engine, .take(session: Self.bob, name: nil))
            engine.publish(led: state(5000, by: Self.ann), seq: 5000, by: Self.ann, room: "order", keep: true)
            control(engine, .release(session: "nobody"))
            #expect((try? hashSeq(redis, "order")) != "5000", "Ann no longer holds the lease")
            engine.publish(led: state(5001, by: Self.bob), seq: 5001, by: Self.bob, room: "order", keep: true)
            control(engine, .release(session: "nobody"))
            #expect((try? hashSeq(redis, "order")) == "5001", "the holder's is")
        }
    }

    /// §7.2: a scroll whose node has not heard that its driver holds the lease goes through the
    /// `scroll` script (here: Bob took control on node B, Redis ran the take, and B's connection
    /// dropped before it heard the answer, so Bob drives on B alone while B still knows Ann's
    /// lease; B's first scroll once Redis answers again). The script numbered it one above the
    /// hash's `seq`, which lags the led states (written back every 250 ms, the pending write
    /// dropped when the lease moves): under a `seq` Ann's node had already given her state, which
    /// every node that heard it shows (I1). It now numbers above the floor B sends, as a new
    /// lease's first state (`RoomMachine.leap(above:)`).
    @Test func aScrollBeforeItsNodeHeardTheLeaseIsNumberedAboveTheLedStatesTheHashLacks() throws {
        let redis = try RedisServer()
        try withEngine(on: redis) { engine in
            // Node A: Ann holds the lease; A ordered her states base … base + 3, and only the
            // first reached the hash before Bob's take.
            let base = engine.seqNow - 1_000_000
            control(engine, .take(session: Self.ann, name: nil))
            engine.publish(led: state(base), seq: base, by: Self.ann, room: "order", keep: true)
            #expect(eventually(timeout: 15) { (try? hashSeq(redis, "order")) == String(base) })
            for seq in base + 1...base + 3 { engine.publish(led: state(seq), seq: seq, by: Self.ann, room: "order", keep: false) }
            control(engine, .take(session: Self.bob, name: nil))

            // Node B heard Ann's states up to base + 1, then Bob's take came back unanswered.
            let (ann, bob) = (try #require(SessionID(Self.ann)), try #require(SessionID(Self.bob)))
            var core = RoomCore(name: "order")
            _ = core.join(bob, role: .presenter, name: "Bob", key: nil)
            var b = RoomMachine<String>(core: core)
            let shared = RoomMachine<String>.Context(documents: .init(limit: 100), shared: true, seqNow: engine.seqNow)
            _ = b.step(.shared(version: 1, .driver(ann, name: "Ann")), shared)
            for seq in base...base + 1 {
                _ = b.step(.led(ScrollState(seq: seq, offset: Double(seq % 1000), viewport: 10, content: 100, progress: 0, direction: .down,
                                            anchor: nil, atTop: false, atBottom: false, by: Self.ann, t: nil, doc: nil)), shared)
            }
            _ = b.step(.unshared(.control(take: true), from: bob, sender: "bob"), shared)
            #expect(b.core.driver == bob && !b.leads(bob), "Bob drives on B alone")
            let effects = b.step(.message(.scroll(ScrollUpdate(offset: 20, viewport: 10, content: 100)), from: bob, sender: "bob"), shared)
            guard case .share(.scroll(let proposed), _, _, _)? = effects.first else {
                Issue.record("the scroll goes to the engine: \(effects)")
                return
            }
            let answered = DispatchSemaphore(value: 0)
            engine.scroll(room: "order", session: Self.bob, suffix: stateSuffix(proposed), seq: proposed.seq) { _ in answered.signal() }
            #expect(answered.wait(timeout: .now() + 15) == .success)
            let numbered = try #require(Int(try hashSeq(redis, "order")))
            #expect(numbered > base + 3, "Bob's state took seq \(numbered - base) above the base: Ann's states hold up to 3")
        }
    }

    /// Divergence 2: the node drops its pending write when its driver loses the lease
    /// (`forgetLed`), so the write never lands.
    @Test func aPendingWriteIsDroppedWhenTheLeaseIsLost() throws {
        let redis = try RedisServer()
        try withEngine(on: redis) { engine in
            control(engine, .take(session: Self.ann, name: nil))
            engine.publish(led: state(5000), seq: 5000, by: Self.ann, room: "order", keep: true)
            engine.forgetLed(room: "order")
            control(engine, .release(session: "nobody"))
            #expect((try? hashSeq(redis, "order")) != "5000", "the pending write was dropped")
        }
    }
}
