import Foundation
import Synchronization
import Logging
import RedisClient
import RoomKit
import Testing
import Transport
@testable import Cluster

/// A scroll the `scroll` script refuses (its sender does not hold the lease) is refused
/// `not_driver`, not taken for an outage: redis-server says `ERR NOTDRIVER`, and an error
/// the engine did not recognise made the node apply the scroll alone (found by
/// `SimScriptsDifferentialTests`).
@Suite("A scroll refused by Redis")
struct ScrollRefusalTests {
    @Test func aScrollFromANonHolderIsRefusedNotAppliedAlone() throws {
        let redis = try RedisServer()
        let group = try EventLoopGroup(count: 1)
        let engine = RedisRoomEngine(endpoint: try RedisEndpoint(url: redis.url), loop: group.loops[0], roomIdleSeconds: 60,
                                     logger: Logger(label: "test"))
        group.start()
        defer { group.shutdown() }
        engine.start()
        defer { engine.stop() }
        #expect(eventually(timeout: 15) { engine.isAvailable }, "the engine reached Redis")
        let outcome = DispatchSemaphore(value: 0)
        let refused = Atomic(false)
        engine.scroll(room: "refusal", session: "aaaa000000000001", suffix: Array(#","offset":1,"by":"aaaa000000000001"}"#.utf8)) { result in
            if case .refused = result { refused.store(true, ordering: .relaxed) }
            outcome.signal()
        }
        #expect(outcome.wait(timeout: .now() + 15) == .success)
        let wasRefused = refused.load(ordering: .relaxed)
        #expect(wasRefused, "refused not_driver (not .unavailable, which applies it here alone)")
    }
}
