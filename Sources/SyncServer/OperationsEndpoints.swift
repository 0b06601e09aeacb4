import Synchronization
import WebSocketCore

/// Server-wide counters (relaxed atomics: read by /metrics, written by every loop).
public final class ServerCounters: Sendable {
    public let connectionsOpen = Atomic<Int>(0)
    public let connectionsAccepted = Atomic<Int>(0)
    public let upgradesRefused = Atomic<Int>(0)

    public init() {}
}

/// `GET /healthz`: 200 while the server accepts connections.
struct HealthEndpoint: HTTPEndpoint {
    var path: String { "/healthz" }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array("ok\n".utf8))
    }
}

/// `GET /metrics`: counters in the Prometheus text format (version 0.0.4).
struct MetricsEndpoint: HTTPEndpoint {
    let counters: ServerCounters
    let hub: LocalRoomHub
    var path: String { "/metrics" }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        let rooms = hub.counters
        let metrics: [(String, String, String, Int)] = [
            ("scrollsync_connections", "gauge", "Open client connections.", counters.connectionsOpen.load(ordering: .relaxed)),
            ("scrollsync_connections_accepted_total", "counter", "TCP connections accepted.", counters.connectionsAccepted.load(ordering: .relaxed)),
            ("scrollsync_upgrades_refused_total", "counter", "Requests answered with an HTTP error instead of an upgrade.",
             counters.upgradesRefused.load(ordering: .relaxed)),
            ("scrollsync_rooms", "gauge", "Rooms held.", hub.roomNames.count),
            ("scrollsync_state_deliveries_total", "counter", "States sent to room members (each member counts once per state).",
             rooms.statesDelivered),
            ("scrollsync_conflated_states_total", "counter", "States replaced by a newer one before reaching a member.",
             rooms.conflatedAtLoop.load(ordering: .relaxed) + rooms.conflatedAtSocket.load(ordering: .relaxed)),
        ]
        var text = ""
        for (name, type, help, value) in metrics {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(text.utf8))
    }
}
