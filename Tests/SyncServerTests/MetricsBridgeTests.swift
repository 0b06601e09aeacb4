import MetricsTestKit
import Operations
@testable import SyncServer
import Testing

/// swift-metrics (issue 28.7): every counter and gauge of /metrics reaches an application's
/// backend, counters as increments since the last report.
@Suite("Metrics through swift-metrics")
struct MetricsBridgeTests {
    @Test func countersAndGaugesReachTheBackend() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let backend = TestMetrics()
        let bridge = server.metricsBridge(to: backend)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/m?role=presenter&key=k")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/m")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) } && follower.wait { $0.contains(#""type":"welcome""#) })
        bridge.report()
        #expect(backend.counterTotal(label: "scrollsync_handshakes_total") == 2)
        #expect(try backend.expectGauge("scrollsync_room_members", [("role", "presenter")]).lastValue == 1)
        #expect(try backend.expectGauge("scrollsync_room_members", [("role", "follower")]).lastValue == 1)

        presenter.send(#"{"type":"scroll","offset":3}"#)
        #expect(follower.wait { $0.contains(#""offset":3,"#) })
        _ = try InProcessClient(server, loop: loop, path: "/rooms/m2")
        bridge.report()
        #expect(backend.counterTotal(label: "scrollsync_handshakes_total") == 3, "increments since the last report, not totals again")
        #expect(backend.counterTotal(label: "scrollsync_state_deliveries_total") >= 1)
        #expect(try backend.expectGauge("scrollsync_rooms", [("state", "active")]).lastValue == 2)
        // Every counter of /metrics has its counterpart (histograms stay in /metrics).
        let snapshot = server.metrics.snapshot()
        for family in snapshot.families where family.kind == .counter && !family.samples.isEmpty {
            #expect(!backend.counters(label: family.name).isEmpty, "\(family.name)")
        }
    }
}
