import Foundation
import Synchronization
import RoomKit
import ScrollModel
import Testing
@testable import Cluster

/// docs/cluster.md §7.15: a merge that keeps its driver publishes its state numbered as a new
/// lease's first state. The room's hash lags its led states (written every 250 ms, never after
/// the lease is gone), so a number one above the hash's `seq` could be one that other nodes
/// already hold another state under (seeds 41774, 41921 with Redis stops).
@Suite("What a merge numbers")
struct MergeNumberingTests {
    static let ann = "00000000000000a1", bob = "00000000000000b2", room = "merge"

    func message(_ seq: Int) -> [UInt8] { Array(#"{"type":"state","seq":\#(seq),"offset":\#(seq),"by":"\#(Self.ann)"}"#.utf8) }

    func control(_ engine: RedisRoomEngine, _ action: ControlAction) {
        let answered = DispatchSemaphore(value: 0)
        engine.control(room: Self.room, action) { _ in answered.signal() }
        #expect(answered.wait(timeout: .now() + 15) == .success)
    }

    @Test func aMergeThatKeepsItsDriverNumbersAboveLedStatesTheHashNeverHeard() throws {
        let redis = try RedisServer()
        try withEngine(on: redis) { engine in
            control(engine, .take(session: Self.ann, name: nil))
            // 5000 goes into the hash (written at once before the release); 5001…5003 reach
            // every node on the channel and never the hash (Ann's node died, or Redis stopped
            // until her lease was gone).
            engine.publish(led: message(5000), seq: 5000, by: Self.ann, room: Self.room, keep: true)
            for seq in 5001...5003 { engine.publish(led: message(seq), seq: seq, by: Self.ann, room: Self.room, keep: false) }
            control(engine, .release(session: Self.ann))

            // Bob drove alone on a node that held an older place; its merge finds the lease free.
            var local = RoomSnapshot()
            local.state = ScrollState(seq: 4990, offset: 4990, viewport: nil, content: nil, progress: nil, direction: .none,
                                      anchor: nil, atTop: false, atBottom: false, by: Self.ann, t: nil, doc: nil)
            local.driver = Self.bob
            let merged = Mutex<RoomSnapshot?>(nil)
            let answered = DispatchSemaphore(value: 0)
            engine.reconcile(room: Self.room, local: local) { snapshot in
                merged.withLock { $0 = snapshot }
                answered.signal()
            }
            try #require(answered.wait(timeout: .now() + 15) == .success)
            let snapshot = try #require(merged.withLock { $0 })
            #expect(snapshot.driver == Self.bob, "the merge kept Bob driving")
            #expect(snapshot.state?.by == Self.bob && snapshot.state?.offset == 4990, "it published his node's place under him")
            let seq = snapshot.state?.seq ?? 0
            #expect(seq >= 5000 + SharedTiming.handoverLeap, "numbered \(seq): above 5001…5003, which every node holds as Ann's")
            #expect(snapshot.seq == seq, "the hash holds it")
        }
    }
}
