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

    func state(_ seq: Int) -> [UInt8] { Array(#"{"type":"state","seq":\#(seq),"offset":\#(seq),"by":"x"}"#.utf8) }

    @Test func aLateWriteBackBelowTheHashsSeqIsNotWritten() throws {
        let redis = try RedisServer()
        try withEngine(on: redis) { engine in
            // The new holder's state (a hand-over leaps 1,024) is in the hash.
            engine.publish(led: state(2069), seq: 2069, room: "order", keep: true)
            #expect(eventually(timeout: 15) { (try? hashSeq(redis, "order")) == "2069" })

            // The old holder's last state, written back after it: a release writes back at once,
            // before its control script, so once the release is answered the write has run.
            engine.publish(led: state(1037), seq: 1037, room: "order", keep: true)
            let answered = DispatchSemaphore(value: 0)
            engine.control(room: "order", .release(session: "nobody")) { _ in answered.signal() }
            #expect(answered.wait(timeout: .now() + 15) == .success)
            #expect((try? hashSeq(redis, "order")) == "2069", "the hash kept the newer state")

            // A newer state still moves it on.
            engine.publish(led: state(2070), seq: 2070, room: "order", keep: true)
            #expect(eventually(timeout: 15) { (try? hashSeq(redis, "order")) == "2070" })
        }
    }
}
