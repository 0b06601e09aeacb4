import ScrollModel
import Synchronization
import Transport

/// A ScrollSync room from Swift concurrency: open it, read its `events` with `for await`,
/// `send` and `close`. The connection stays up by itself (reconnecting with backoff, over
/// several URLs in turn) until `close()` or until the server refuses it for good.
///
///     let room = try RoomSession(url: "ws://127.0.0.1:8080/rooms/demo")
///     for await event in room.events {
///         if case .server(.state(let state)) = event { print(state.anchor?.id ?? "-") }
///     }
///
/// The session runs its connection on an event loop of its own (a thread), unless given one.
public final class RoomSession: Sendable {
    public enum Event: Sendable, Equatable {
        /// Connecting, connected, waiting to retry, refused for good, or stopped.
        case connection(RoomStatus)
        /// A message from the room: `welcome`, `state`, `driver`, `document`, `presence`, `error`.
        case server(ServerEvent)
        /// The link's round trip, measured every few seconds.
        case roundTrip(milliseconds: Int)
    }

    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Not connected now: the message was not sent (the next `welcome` says where the room is).
        case notConnected
        /// The session was closed.
        case closed

        public var description: String {
            switch self {
            case .notConnected: "not connected to the room now"
            case .closed: "the room session is closed"
            }
        }
    }

    /// The room's events, in order; the sequence ends when the session has stopped (closed,
    /// or refused for good: the last event says which). One reader at a time.
    public let events: AsyncStream<Event>
    private let client: RoomClient
    /// The loop the session made for itself (stopped at `close`), if it made one.
    private let ownLoop: EventLoopGroup?
    /// Until `close`: a message is queued on the loop under this lock, and `close` queues the
    /// stop under it, so every message sent before the close runs before the loop stops.
    private let isOpen = Mutex(true)

    /// Opens a session and starts connecting.
    /// - Parameters:
    ///   - url: the room's URL (`ws[s]://HOST:PORT/rooms/NAME`, with `?role=presenter&key=…`
    ///     to present); more than one URL are tried in turn.
    ///   - loop: an event loop to run on; nil makes one (a thread) for this session.
    public convenience init(url: String, _ more: String..., options: RoomOptions = .init(), loop: EventLoop? = nil) throws {
        try self.init(urls: ([url] + more).map { try WebSocketURL(parsing: $0) }, options: options, loop: loop)
    }

    public init(urls: [WebSocketURL], options: RoomOptions = .init(), loop: EventLoop? = nil) throws {
        let group = try loop == nil ? EventLoopGroup(count: 1) : nil
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        events = stream
        client = try RoomClient(urls: urls, loop: loop ?? group!.loops[0], options: options) { event in
            switch event {
            case .status(let status):
                continuation.yield(.connection(status))
                if status == .stopped { continuation.finish() }
            case .message(let message): continuation.yield(.server(message))
            case .roundTrip(let milliseconds): continuation.yield(.roundTrip(milliseconds: milliseconds))
            }
        }
        ownLoop = group
        group?.start()
        client.start()
    }

    /// Sends `message` to the room; returns once the connection has taken it.
    public func send(_ message: ClientMessage) async throws(Failure) {
        let sent = await withCheckedContinuation { (done: CheckedContinuation<Bool?, Never>) in
            isOpen.withLock { open in
                if open { client.send(message) { done.resume(returning: $0) } } else { done.resume(returning: nil) }
            }
        }
        guard let sent else { throw .closed }
        if !sent { throw .notConnected }
    }

    /// Closes the connection (a close frame, `1001 going away`) and returns once it is closed
    /// and the session's own loop has stopped; `events` then ends.
    /// Closing a closed session does nothing.
    public func close() async {
        let closing = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            isOpen.withLock { open in
                guard open else { return done.resume(returning: false) }
                open = false
                client.stop { done.resume(returning: true) }
            }
        }
        if closing { ownLoop?.shutdown() }
    }
}
