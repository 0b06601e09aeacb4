import Synchronization
import WebSocketCore

/// What links count (relaxed atomics: written by every loop, read by /metrics): upgraded
/// connections, WebSocket messages and bytes, how connections ended. Per-message counts are
/// summed per read or drain, never per delivery. A server's counters extend it
/// (`ServerCounters`); a client's link counts into one of its own.
///
/// Open, so `@unchecked Sendable`: its fields are atomics, and a subclass must keep to
/// `Sendable` fields as well. A link reaches these `let` fields directly, as it would a final
/// class's: no dynamic call on a send.
open class LinkCounters: @unchecked Sendable {
    /// Connections upgraded and not yet ended.
    public let connectionsUpgraded = Atomic<Int>(0)
    /// WebSocket upgrades completed.
    public let upgrades = Atomic<Int>(0)
    /// WebSocket messages and bytes (frame payloads in; frames out).
    public let messagesIn = Atomic<Int>(0)
    public let bytesIn = Atomic<Int>(0)
    public let messagesOut = Atomic<Int>(0)
    public let bytesOut = Atomic<Int>(0)
    /// Connections closed for an unfinished message: over the process's budget (1013) or
    /// past the deadline (1008).
    public let unfinishedMessagesClosed = Atomic<Int>(0)

    public init() {}

    /// A WebSocket connection ended with `code` (`.abnormal`: dropped); once per connection.
    /// Nothing here: a server counts codes (`ServerCounters`).
    open func closed(code: CloseCode) {}
}
