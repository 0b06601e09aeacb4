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
