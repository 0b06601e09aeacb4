import ScrollModel
import Transport
import WebSocketCore

/// `GET /healthz`: 200 while the server accepts connections. The first line is `ok`, or
/// `degraded` while something it depends on fails (still 200: it keeps serving); the lines
/// after it say what: `redis: up|unavailable`, `store: ok|failing (reason)`, and
/// `store: N damaged files at start-up` when some were.
struct HealthEndpoint: HTTPEndpoint {
    let engine: RedisRoomEngine?
    let store: (any RoomStore)?
    var path: String { "/healthz" }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        var degraded = false
        var lines = [String]()
        if let engine {
            degraded = degraded || !engine.isAvailable
            lines.append(engine.isAvailable ? "redis: up" : "redis: unavailable")
        }
        if let store {
            let health = store.health
            degraded = degraded || health.failing
            lines.append(health.failing ? "store: failing (\(health.lastError ?? "write failed")), \(health.pendingRooms) rooms waiting" : "store: ok")
            if health.damagedFiles > 0 { lines.append("store: \(health.damagedFiles) damaged files at start-up (see the log)") }
        }
        let body = ([degraded ? "degraded" : "ok"] + lines).joined(separator: "\n") + "\n"
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(body.utf8))
    }
}

/// `GET /rooms`: every room with its member counts and last `seq`, as JSON. With an admin
/// token configured, only for `Authorization: Bearer TOKEN` (401 otherwise).
struct RoomsEndpoint: HTTPEndpoint {
    let hub: LocalRoomHub
    let adminToken: String?
    var path: String { "/rooms" }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        if let refusal = AdminToken.refusal(request, token: adminToken) { return refusal }
        var writer = JSONWriter(capacity: 4096)
        writer.beginObject()
        writer.key("rooms")
        writer.beginArray()
        // Private rooms are left out: their names are for those who were given them.
        for room in hub.summaries() where !room.isPrivate {
            writer.beginObject()
            writer.field("name", room.name)
            writer.field("presenters", room.presenters)
            writer.field("followers", room.followers)
            writer.field("detached", room.detached)
            writer.field("seq", room.seq)
            writer.key("driving")
            writer.bool(room.driving)
            writer.key("driverName")
            if let name = room.driverName { writer.string(name) } else { writer.null() }
            writer.key("document")
            if let document = room.document { writer.string(document) } else { writer.null() }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: writer.bytes + [10])
    }
}

/// `GET /metrics`: the Prometheus text format (version 0.0.4).
struct MetricsEndpoint: HTTPEndpoint {
    let counters: ServerCounters
    let hub: LocalRoomHub
    let loops: [EventLoop]
    let engine: RedisRoomEngine?
    let messageBudget: MessageBudget
    let store: (any RoomStore)?
    let adminToken: String?
    var path: String { "/metrics" }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        if let refusal = AdminToken.refusal(request, token: adminToken) { return refusal }
        var text = PrometheusText()
        let rooms = hub.counters
        let open = counters.connectionsOpen.load(ordering: .relaxed)
        let upgraded = counters.connectionsUpgraded.load(ordering: .relaxed)
        text.metric("scrollsync_connections", "gauge", "Open client connections by phase.", [
            ("state=\"handshake\"", open - upgraded), ("state=\"open\"", upgraded),
        ])
        text.metric("scrollsync_connections_accepted_total", "counter", "TCP connections accepted.", [("", counters.connectionsAccepted.load(ordering: .relaxed))])
        let summaries = hub.summaries()
        let active = summaries.filter { $0.presenters + $0.followers > 0 }.count
        text.metric("scrollsync_rooms", "gauge", "Rooms held, by whether anyone is in them.", [
            ("state=\"active\"", active), ("state=\"empty\"", summaries.count - active),
        ])
        text.metric("scrollsync_room_members", "gauge", "Room members by role.", [
            ("role=\"presenter\"", summaries.reduce(0) { $0 + $1.presenters }),
            ("role=\"follower\"", summaries.reduce(0) { $0 + $1.followers }),
        ])
        text.metric("scrollsync_handshakes_total", "counter", "WebSocket upgrades completed.", [("", counters.upgrades.load(ordering: .relaxed))])
        text.metric("scrollsync_handshake_failures_total", "counter", "Requests answered with an HTTP error instead of an upgrade, by status.",
                    ServerCounters.refusalStatuses.map { status in ("status=\"\(status == 0 ? "other" : String(status))\"", counters.refusals(status: status)) })
        text.metric("scrollsync_upgrades_refused_total", "counter", "All refused requests (the sum of scrollsync_handshake_failures_total).", [("", counters.upgradesRefused)])
        text.metric("scrollsync_messages_in_total", "counter", "WebSocket messages received.", [("", counters.messagesIn.load(ordering: .relaxed))])
        text.metric("scrollsync_bytes_in_total", "counter", "Bytes received on WebSocket connections.", [("", counters.bytesIn.load(ordering: .relaxed))])
        text.metric("scrollsync_messages_out_total", "counter", "Frames queued to clients (broadcasts count once per receiver).", [
            ("", counters.messagesOut.load(ordering: .relaxed) + rooms.broadcastFrames.load(ordering: .relaxed)),
        ])
        text.metric("scrollsync_bytes_out_total", "counter", "Bytes of frames queued to clients.", [
            ("", counters.bytesOut.load(ordering: .relaxed) + rooms.broadcastBytes.load(ordering: .relaxed)),
        ])
        text.metric("scrollsync_state_deliveries_total", "counter", "States sent to room members (each member counts once per state).", [("", rooms.statesDelivered)])
        text.metric("scrollsync_conflated_states_total", "counter", "States replaced by a newer one before reaching a member.", [
            ("", rooms.conflatedAtLoop.load(ordering: .relaxed) + rooms.conflatedAtSocket.load(ordering: .relaxed)),
        ])
        text.metric("scrollsync_rate_limited_total", "counter", "Scrolls refused with rate_limited.", [("", counters.rateLimited.load(ordering: .relaxed))])
        text.metric("scrollsync_refusals_total", "counter",
                    "Requests, joins and connections refused, by reason (origin, follow_key, token, key_limit, room_creations, room_limit, connections, message_flood).",
                    RefusalReason.allCases.map { ("reason=\"\($0.rawValue)\"", counters.refusalReasons.value($0)) })
        text.metric("scrollsync_errors_unanswered_total", "counter", "Refused messages not answered with an error (over 100 at once, then 10 a second, per connection).",
                    [("", counters.errorsUnanswered.load(ordering: .relaxed))])
        text.metric("scrollsync_presenter_key_failures_total", "counter", "Presenters refused for a wrong or missing key.",
                    [("", rooms.presenterKeyFailures.load(ordering: .relaxed))])
        text.metric("scrollsync_presenter_key_checks_refused_total", "counter",
                    "Presenter joins refused unchecked: the address had limits.keyFailuresPerMinute wrong keys and checks running for the room.",
                    [("", rooms.presenterKeyChecksRefused.load(ordering: .relaxed))])
        text.metric("scrollsync_document_bytes", "gauge", "Bytes of shared documents the rooms hold (limit: limits.documentsTotalBytes).",
                    [("", hub.documentBytesHeld)])
        text.metric("scrollsync_unfinished_message_bytes", "gauge", "Bytes held in unfinished messages (limit: limits.unfinishedMessageBytes).",
                    [("", messageBudget.inUse)])
        text.metric("scrollsync_unfinished_messages_closed_total", "counter",
                    "Connections closed for an unfinished message: over the budget (1013) or past timeouts.message (1008).",
                    [("", counters.unfinishedMessagesClosed.load(ordering: .relaxed))])
        text.metric("scrollsync_close_codes_total", "counter", "Ended WebSocket connections by close code (1006: dropped without a close).",
                    counters.closeCodeCounts.map { ("code=\"\($0.0 == 0 ? "other" : String($0.0))\"", $0.1) })
        rooms.broadcastLatency.write(into: &text, name: "scrollsync_broadcast_latency_seconds",
                                     help: "Time from a room change to its delivery on each event loop with members.")
        text.gauge("scrollsync_event_loop_lag_seconds", "How late each event loop ran its last once-a-second tick.",
                   loops.map { ("loop=\"\($0.index)\"", Double($0.lagNanoseconds.load(ordering: .relaxed)) / 1e9) })
        if let store {
            let health = store.health
            text.metric("scrollsync_store_up", "gauge", "1 while the store writes, 0 while its writes fail (they are retried).", [("", health.failing ? 0 : 1)])
            text.metric("scrollsync_store_write_failures_total", "counter", "Store writes that failed (each is retried).", [("", health.failedWrites)])
            text.metric("scrollsync_store_pending_rooms", "gauge", "Rooms waiting to be written.", [("", health.pendingRooms)])
            text.metric("scrollsync_store_damaged_files", "gauge", "Stored files found damaged at start-up.", [("", health.damagedFiles)])
        }
        if let engine {
            text.metric("scrollsync_redis_up", "gauge", "1 while Redis is reachable (rooms are shared), 0 while this node serves alone.",
                        [("", engine.isAvailable ? 1 : 0)])
            text.metric("scrollsync_redis_outages_total", "counter", "Times Redis became unreachable.",
                        [("", engine.statistics.outages.load(ordering: .relaxed))])
            text.metric("scrollsync_redis_messages_total", "counter", "Room changes and counts received from Redis.",
                        [("", engine.statistics.messagesIn.load(ordering: .relaxed))])
            text.metric("scrollsync_redis_refused_total", "counter",
                        "What was read from Redis and refused (never applied or forwarded), by reason: malformed, invalid (fails the protocol's checks), implausible (a version or seq that cannot follow; the room is fetched again), snapshot (a room hash field).",
                        SharedInput.Refusal.Reason.allCases.map { ("reason=\"\($0.rawValue)\"", engine.statistics.refusals($0)) })
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(text.text.utf8))
    }
}

/// Builds a Prometheus text exposition.
struct PrometheusText {
    private(set) var text = ""

    mutating func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Int)]) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for (labels, value) in samples { text += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n" }
    }

    mutating func gauge(_ name: String, _ help: String, _ samples: [(labels: String, value: Double)]) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
        for (labels, value) in samples { text += "\(name){\(labels)} \(value)\n" }
    }

    mutating func histogram(_ name: String, _ help: String, buckets: [(bound: Double, count: Int)], sum: Double, count: Int) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for (bound, cumulative) in buckets { text += "\(name)_bucket{le=\"\(bound)\"} \(cumulative)\n" }
        text += "\(name)_bucket{le=\"+Inf\"} \(count)\n\(name)_sum \(sum)\n\(name)_count \(count)\n"
    }
}

/// The operator's bearer token (`admin.token`) on `GET /rooms` and `GET /metrics`.
enum AdminToken {
    /// 401 unless the request carries `Authorization: Bearer TOKEN` (compared in constant
    /// time); nil when it does or no token is set.
    static func refusal(_ request: HTTPRequest, token: String?) -> HTTPResponse? {
        guard let token else { return nil }
        let given = request.value("Authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
        guard !RoomCore.constantTimeEqual(Array(given.utf8), Array(token.utf8)) else { return nil }
        return .error(401, "GET \(request.path) needs Authorization: Bearer <admin token>", headers: [("WWW-Authenticate", "Bearer")])
    }
}
