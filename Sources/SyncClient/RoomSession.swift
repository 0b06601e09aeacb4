import ScrollModel
import Synchronization
import Transport

/// A ScrollSync room from Swift concurrency, open for the length of a closure:
///
///     try await RoomSession.connect(to: "ws://127.0.0.1:8080/rooms/demo") { room in
///         for try await event in room.events {
///             if case .server(.state(let state)) = event { print(state.anchor?.id ?? "-") }
///         }
///     }
///
/// The connection stays up by itself (reconnecting with backoff, over several URLs in turn)
/// until the closure returns or throws, its task is cancelled, or the server refuses it for
/// good; then it is closed (a close frame, `1001 going away`) before `connect` returns.
/// `events` is bounded: a reader that falls behind gets the newest state, not a backlog
/// (see `Events`).
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

    /// The room's events in order, ending once the session has stopped (closed, or refused for
    /// good: the last event says which); iterating throws `CancellationError` when the task is
    /// cancelled. One reader at a time.
    ///
    /// What waits for a slow reader is bounded as the server bounds a follower: a `state`
    /// replaces a waiting state (but never one from before a `welcome`, `driver` or `document`
    /// that waits too, so a driver change is heard before its driver's states); `presence`,
    /// round trips and connection statuses keep only their newest; of other events at most 64
    /// wait (`droppedEvents` counts what was dropped beyond that).
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = Event
        fileprivate let buffer: RoomEvents

        public struct AsyncIterator: AsyncIteratorProtocol {
            fileprivate let buffer: RoomEvents
            public mutating func next() async throws -> Event? { try await buffer.next() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: buffer) }
    }

    public let events: Events
    private let client: RoomClient
    private let loops: EventLoopGroup
    /// Until `close`: a message is queued on the loop under this lock, and `close` queues the
    /// stop under it, so every message sent before the close runs before the loop stops.
    private let isOpen = Mutex(true)

    /// Opens a room, runs `body` with it, and closes it when `body` returns or throws (or its
    /// task is cancelled, which ends `events` with `CancellationError`).
    /// - Parameters:
    ///   - url: the room's URL (`ws[s]://HOST:PORT/rooms/NAME`, with `?role=presenter&key=…`
    ///     to present); more than one URL are tried in turn.
    ///   - options: TLS and reconnection settings.
    /// - Throws: a URL that does not parse, a TLS setting that does not load, or what `body` throws.
    public static func connect<Result>(
        to url: String, _ more: String..., options: RoomOptions = .init(),
        isolation: isolated (any Actor)? = #isolation,
        _ body: (RoomSession) async throws -> sending Result
    ) async throws -> sending Result {
        let urls = try ([url] + more).map { try WebSocketURL(parsing: $0) }
        return try await connect(to: urls, options: options, body)
    }

    /// `connect(to:options:_:)` with URLs already parsed.
    public static func connect<Result>(
        to urls: [WebSocketURL], options: RoomOptions = .init(),
        isolation: isolated (any Actor)? = #isolation,
        _ body: (RoomSession) async throws -> sending Result
    ) async throws -> sending Result {
        precondition(!urls.isEmpty, "at least one URL")
        let room = try RoomSession(urls: urls, options: options)
        do {
            let result = try await body(room)
            await room.close()
            return result
        } catch {
            await room.close()
            throw error
        }
    }

    private init(urls: [WebSocketURL], options: RoomOptions) throws {
        let group = try EventLoopGroup(count: 1)
        let buffer = RoomEvents()
        events = Events(buffer: buffer)
        do {
            client = try RoomClient(urls: urls, loop: group.loops[0], options: options) { event in
                switch event {
                case .status(let status):
                    buffer.push(.connection(status))
                    if status == .stopped { buffer.finish() }
                case .message(let message): buffer.push(.server(message))
                case .roundTrip(let milliseconds): buffer.push(.roundTrip(milliseconds: milliseconds))
                }
            }
        } catch {
            group.shutdown()
            throw error
        }
        loops = group
        group.start()
        client.start()
    }

    /// States this session's reader never saw because a newer one replaced them.
    public var replacedStates: Int { events.buffer.replacedStates }
    /// The events that wait for the reader now, oldest first (for tests).
    package var waitingEvents: [Event] { events.buffer.waiting }
    /// Events dropped because more than 64 waited for the reader (see `Events`).
    public var droppedEvents: Int { events.buffer.dropped }

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

    /// Closes the connection before the closure returns (`connect` closes it anyway) and
    /// returns once it is closed; `events` then ends. Closing a closed session does nothing.
    public func close() async {
        let closing = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            isOpen.withLock { open in
                guard open else { return done.resume(returning: false) }
                open = false
                client.stop { done.resume(returning: true) }
            }
        }
        if closing { loops.shutdown() }
    }
}
