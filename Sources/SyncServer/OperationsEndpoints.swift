package import Cluster
import HTTP1
import Hub
import ScrollModel
import Transport
import WebSocketCore

/// `GET /healthz`: 200 while the server accepts connections. The first line is `ok`, or
/// `degraded` while something it depends on fails (still 200: it keeps serving); the lines
/// after it say what: `redis: up|unavailable`, `store: ok|failing (reason)`, and
/// `store: N damaged files at start-up` when some were.
struct HealthEndpoint: HTTPEndpoint {
    let redis: RedisShardList
    let store: (any RoomStore)?
    var recordings: RecordingFiles?
    var path: String { "/healthz" }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        var degraded = false
        var lines = [String]()
        if !redis.isEmpty {
            let shards = redis.current
            let down = shards.filter { !$0.isAvailable }
            degraded = degraded || !redis.isAvailable
            if redis.isAvailable {
                lines.append("redis: up")
            } else if down.isEmpty {
                lines.append("redis: unavailable (the cluster's map has slots without a master)")
            } else {
                lines.append("redis: unavailable" + (shards.count > 1 ? " (\(down.count) of \(shards.count) shards: \(down.map { "\($0.endpoint)" }.joined(separator: ", ")))" : ""))
            }
        }
        if let store {
            let health = store.health
            degraded = degraded || health.failing
            lines.append(health.failing ? "store: failing (\(health.lastError ?? "write failed")), \(health.pendingRooms) rooms waiting" : "store: ok")
            if health.damagedFiles > 0 { lines.append("store: \(health.damagedFiles) damaged files at start-up (see the log)") }
        }
        if let recordings {
            let failing = recordings.failing
            degraded = degraded || failing != nil
            lines.append(failing.map { "recordings: failing (\($0))" } ?? "recordings: ok")
            if recordings.damagedFiles > 0 { lines.append("recordings: \(recordings.damagedFiles) damaged files at start-up (see the log)") }
        }
        let body = ([degraded ? "degraded" : "ok"] + lines).joined(separator: "\n") + "\n"
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(body.utf8))
    }
}

/// `GET /rooms`: every room with its member counts and last `seq`, as JSON. With an admin
/// token configured, only for `Authorization: Bearer TOKEN` (401 otherwise).
struct RoomsEndpoint: HTTPEndpoint {
    let hub: LocalRoomHub
    let adminToken: Reloadable<String?>
    var path: String { "/rooms" }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        if let refusal = AdminToken.refusal(request, token: adminToken.value) { return refusal }
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

/// `GET /metrics`: the Prometheus text format (version 0.0.4), behind the admin token.
struct MetricsEndpoint: HTTPEndpoint {
    let metrics: ServerMetrics
    let adminToken: Reloadable<String?>
    var path: String { "/metrics" }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        if let refusal = AdminToken.refusal(request, token: adminToken.value) { return refusal }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                            body: Array(metrics.snapshot().text.utf8))
    }
}

/// The operator's bearer token (`admin.token`) on `GET /rooms` and `GET /metrics`.
enum AdminToken {
    /// 401 unless the request carries `Authorization: Bearer TOKEN` (compared in constant
    /// time); nil when it does or no token is set.
    static func refusal(_ request: HTTPRequest, token: String?) -> HTTPResponse? {
        guard let token else { return nil }
        let given = request.value(.authorization).flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
        guard !ConstantTime.equal(given.utf8, token.utf8) else { return nil }
        return .error(401, "GET \(request.path) needs Authorization: Bearer <admin token>", headers: [("WWW-Authenticate", "Bearer")])
    }
}
