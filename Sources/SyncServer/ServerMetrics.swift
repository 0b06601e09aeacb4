package import Cluster
import Hub
package import RoomKit
import Operations
import ScrollModel
import Synchronization
import Transport
import WebSocketCore

/// The server's metrics, read from its counters when asked: for `GET /metrics` (the
/// Prometheus text format, version 0.0.4) and for swift-metrics (`MetricsBridge`).
struct ServerMetrics: Sendable {
    let counters: ServerCounters
    let hub: LocalRoomHub
    let loops: [EventLoop]
    /// The Redis shards (empty: a single process); counts are summed over them.
    let redis: RedisShardList
    let messageBudget: MessageBudget
    let store: (any RoomStore)?

    /// Every metric's samples now.
    func snapshot() -> MetricsSnapshot {
        var text = MetricsSnapshot()
        let rooms = hub.counters
        let open = counters.connectionsOpen.load(ordering: .relaxed)
        let upgraded = counters.connectionsUpgraded.load(ordering: .relaxed)
        text.metric("scrollsync_connections", "gauge", "Open client connections by phase.", [
            ([("state", "handshake")], open - upgraded), ([("state", "open")], upgraded),
        ])
        text.metric("scrollsync_connections_accepted_total", "counter", "TCP connections accepted.", [([], counters.connectionsAccepted.load(ordering: .relaxed))])
        let summaries = hub.summaries()
        let active = summaries.filter { $0.presenters + $0.followers > 0 }.count
        text.metric("scrollsync_rooms", "gauge", "Rooms held, by whether anyone is in them.", [
            ([("state", "active")], active), ([("state", "empty")], summaries.count - active),
        ])
        text.metric("scrollsync_room_members", "gauge", "Room members by role.", [
            ([("role", "presenter")], summaries.reduce(0) { $0 + $1.presenters }),
            ([("role", "follower")], summaries.reduce(0) { $0 + $1.followers }),
        ])
        text.metric("scrollsync_handshakes_total", "counter", "WebSocket upgrades completed.", [([], counters.upgrades.load(ordering: .relaxed))])
        text.metric("scrollsync_handshake_failures_total", "counter", "Requests answered with an HTTP error instead of an upgrade, by status.",
                    ServerCounters.refusalStatuses.map { status in ([("status", status == 0 ? "other" : String(status))], counters.refusals(status: status)) })
        text.metric("scrollsync_upgrades_refused_total", "counter", "All refused requests (the sum of scrollsync_handshake_failures_total).", [([], counters.upgradesRefused)])
        text.metric("scrollsync_messages_in_total", "counter", "WebSocket messages received.", [([], counters.messagesIn.load(ordering: .relaxed))])
        text.metric("scrollsync_bytes_in_total", "counter", "Bytes received on WebSocket connections.", [([], counters.bytesIn.load(ordering: .relaxed))])
        text.metric("scrollsync_messages_out_total", "counter", "Frames queued to clients (broadcasts count once per receiver).", [
            ([], counters.messagesOut.load(ordering: .relaxed) + rooms.broadcastFrames.load(ordering: .relaxed)),
        ])
        text.metric("scrollsync_bytes_out_total", "counter", "Bytes of frames queued to clients.", [
            ([], counters.bytesOut.load(ordering: .relaxed) + rooms.broadcastBytes.load(ordering: .relaxed)),
        ])
        text.metric("scrollsync_state_deliveries_total", "counter", "States sent to room members (each member counts once per state).", [([], rooms.statesDelivered)])
        text.metric("scrollsync_conflated_states_total", "counter", "States replaced by a newer one before reaching a member.", [
            ([], rooms.conflatedAtLoop.load(ordering: .relaxed) + rooms.conflatedAtSocket.load(ordering: .relaxed)),
        ])
        text.metric("scrollsync_rate_limited_total", "counter", "Scrolls refused with rate_limited.", [([], counters.rateLimited.load(ordering: .relaxed))])
        text.metric("scrollsync_refusals_total", "counter",
                    "Requests, joins and connections refused, by reason (origin, follow_key, token, key_limit, room_creations, room_limit, connections, message_flood).",
                    RefusalReason.allCases.map { ([("reason", $0.rawValue)], counters.refusalReasons.value($0)) })
        text.metric("scrollsync_errors_unanswered_total", "counter", "Refused messages not answered with an error (over 100 at once, then 10 a second, per connection).",
                    [([], counters.errorsUnanswered.load(ordering: .relaxed))])
        text.metric("scrollsync_presenter_key_failures_total", "counter", "Presenters refused for a wrong or missing key.",
                    [([], rooms.presenterKeyFailures.load(ordering: .relaxed))])
        text.metric("scrollsync_presenter_key_checks_refused_total", "counter",
                    "Presenter joins refused unchecked: the address had limits.keyFailuresPerMinute wrong keys and checks running for the room.",
                    [([], rooms.presenterKeyChecksRefused.load(ordering: .relaxed))])
        text.metric("scrollsync_recordings_started_total", "counter", "Rooms whose recording started (rooms.record, record=1).",
                    [([], rooms.recordingsStarted.load(ordering: .relaxed))])
        text.metric("scrollsync_recordings_stopped_total", "counter",
                    "Recordings that stopped at limits.recordingBytes or limits.recordingsTotalBytes.",
                    [([], rooms.recordingsStopped.load(ordering: .relaxed))])
        text.metric("scrollsync_recording_bytes", "gauge", "Bytes of recordings the rooms hold (limit: limits.recordingsTotalBytes).",
                    [([], hub.recordingBytes.bytesHeld)])
        let screens = hub.screenRenderer.counters
        text.metric("scrollsync_tty_readers", "gauge", "Terminal readers streaming (GET /rooms/NAME/tty; also counted as followers).",
                    [([], screens.readers.load(ordering: .relaxed))])
        text.metric("scrollsync_tty_frames_rendered_total", "counter", "Terminal frames rendered: one per room, size and change.",
                    [([], screens.framesRendered.load(ordering: .relaxed))])
        text.metric("scrollsync_tty_frames_sent_total", "counter", "Terminal frames queued to readers (a frame counts once per reader).",
                    [([], screens.framesSent.load(ordering: .relaxed))])
        text.metric("scrollsync_tty_bytes_sent_total", "counter", "Bytes of terminal frames queued to readers.", [([], screens.bytesSent.load(ordering: .relaxed))])
        text.metric("scrollsync_tty_frames_conflated_total", "counter", "Terminal frames replaced by a newer one before a reader took them.",
                    [([], screens.framesConflated.load(ordering: .relaxed))])
        text.metric("scrollsync_document_bytes", "gauge", "Bytes of shared documents the rooms hold (limit: limits.documentsTotalBytes).",
                    [([], hub.documentBytesHeld)])
        text.metric("scrollsync_unfinished_message_bytes", "gauge", "Bytes held in unfinished messages (limit: limits.unfinishedMessageBytes).",
                    [([], messageBudget.inUse)])
        text.metric("scrollsync_unfinished_messages_closed_total", "counter",
                    "Connections closed for an unfinished message: over the budget (1013) or past timeouts.message (1008).",
                    [([], counters.unfinishedMessagesClosed.load(ordering: .relaxed))])
        text.metric("scrollsync_close_codes_total", "counter", "Ended WebSocket connections by close code (1006: dropped without a close).",
                    counters.closeCodeCounts.map { ([("code", $0.0 == 0 ? "other" : String($0.0))], $0.1) })
        text.histogram("scrollsync_broadcast_latency_seconds", "Time from a room change to its delivery on each event loop with members.",
                       rooms.broadcastLatency)
        text.gauge("scrollsync_event_loop_lag_seconds", "How late each event loop ran its last once-a-second tick.",
                   loops.map { ([("loop", String($0.index))], Double($0.lagNanoseconds.load(ordering: .relaxed)) / 1e9) })
        if let store {
            let health = store.health
            text.metric("scrollsync_store_up", "gauge", "1 while the store writes, 0 while its writes fail (they are retried).", [([], health.failing ? 0 : 1)])
            text.metric("scrollsync_store_write_failures_total", "counter", "Store writes that failed (each is retried).", [([], health.failedWrites)])
            text.metric("scrollsync_store_pending_rooms", "gauge", "Rooms waiting to be written.", [([], health.pendingRooms)])
            text.metric("scrollsync_store_damaged_files", "gauge", "Stored files found damaged at start-up.", [([], health.damagedFiles)])
        }
        if !redis.isEmpty {
            let shards = redis.current, counters = redis.counters
            func sum(_ value: (EngineCounters) -> Int) -> Int { counters.reduce(0) { $0 + value($1) } }
            text.metric("scrollsync_redis_up", "gauge", "1 while every Redis shard is reachable (rooms are shared), 0 while this node serves alone.",
                        [([], redis.isAvailable ? 1 : 0)])
            text.metric("scrollsync_redis_shards", "gauge", "Redis servers rooms are spread over (redis.url and redis.shards, or a cluster's masters), and how many answer.",
                        [([("state", "configured")], shards.count), ([("state", "up")], shards.filter(\.isAvailable).count)])
            text.metric("scrollsync_redis_outages_total", "counter", "Times a Redis shard became unreachable.",
                        [([], sum { $0.outages.load(ordering: .relaxed) })])
            text.metric("scrollsync_redis_messages_total", "counter", "Room changes and counts received from Redis.",
                        [([], sum { $0.messagesIn.load(ordering: .relaxed) })])
            text.metric("scrollsync_redis_changes_sent_total", "counter",
                        "Changes this node sent to Redis: led (a state its driver made, published without a script) or scripted (control, documents, a scroll before the lease was known).",
                        [([("kind", "led")], sum { $0.ledStates.load(ordering: .relaxed) }),
                         ([("kind", "scripted")], sum { $0.scriptedChanges.load(ordering: .relaxed) })])
            text.metric("scrollsync_redis_refused_total", "counter",
                        "What was read from Redis and refused (never applied or forwarded), by reason: malformed, invalid (fails the protocol's checks), implausible (a version or seq that cannot follow; the room is fetched again), snapshot (a room hash field), unconfirmed (a control change the room's lease does not confirm), unsigned (not signed with redis.secret).",
                        SharedInput.Refusal.Reason.allCases.map { reason in ([("reason", reason.rawValue)], sum { $0.refusals(reason) }) })
            text.metric("scrollsync_redis_refetch_total", "counter",
                        "Rooms fetched again from Redis because a change could not follow what the room held (a gap in versions, a version already held with other content, a seq too far ahead).",
                        [([], hub.counters.refetches.load(ordering: .relaxed))])
        }
        return text
    }
}

extension MetricsSnapshot {
    /// The hub's latency histogram as one histogram family.
    mutating func histogram(_ name: String, _ help: String, _ latency: LatencyHistogram) {
        histogram(name, help, buckets: latency.buckets, sum: latency.sumSeconds, count: latency.count)
    }
}
