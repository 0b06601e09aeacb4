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
        try withEngine(on: try RedisServer()) { engine in
            let outcome = DispatchSemaphore(value: 0)
            let refused = Atomic(false)
            engine.scroll(room: "refusal", session: "aaaa000000000001", suffix: Array(#","offset":1,"by":"aaaa000000000001"}"#.utf8), seq: 1) { result in
                if case .refused = result { refused.store(true, ordering: .relaxed) }
                outcome.signal()
            }
            #expect(outcome.wait(timeout: .now() + 15) == .success)
            let wasRefused = refused.load(ordering: .relaxed)
            #expect(wasRefused, "refused not_driver (not .unavailable, which applies it here alone)")
        }
    }
}
