import DequeModule
import ScrollModel
import Synchronization

/// A room's events as a slow reader sees them: bounded, newest state first in line.
///
/// The connection pushes every event; the reader takes them in order. What waits for a reader
/// is bounded the way the server bounds a follower (one latest-state slot):
/// - a `state` replaces a state still waiting after the last `welcome`, `driver` or
///   `document` (so a driver change is still heard before its driver's states);
/// - `presence`, a round trip and a connection status each replace their own kind waiting;
/// - at most `limit` other events wait; beyond that the oldest is dropped and counted.
///
/// A reader that keeps up sees every event; one that falls behind sees the newest state,
/// never a backlog.
package final class RoomEvents: Sendable {
    private struct State {
        var waiting = Deque<RoomSession.Event>()
        var reader: CheckedContinuation<RoomSession.Event?, any Error>?
        var finished = false
        var replacedStates = 0
        var dropped = 0
    }

    /// The most events other than states, presence, round trips and statuses that wait.
    package let limit: Int
    private let state = Mutex(State())

    package init(limit: Int = 64) {
        precondition(limit > 0)
        self.limit = limit
    }

    /// States a reader never saw because a newer one replaced them while it waited.
    package var replacedStates: Int { state.withLock { $0.replacedStates } }
    /// Events dropped because more than `limit` waited.
    package var dropped: Int { state.withLock { $0.dropped } }
    /// The events that wait for the reader now, oldest first.
    package var waiting: [RoomSession.Event] { state.withLock { Array($0.waiting) } }

    /// Hands `event` to a waiting reader or queues it (replacing what it makes stale).
    package func push(_ event: RoomSession.Event) {
        let reader = state.withLock { state -> CheckedContinuation<RoomSession.Event?, any Error>? in
            guard !state.finished else { return nil }
            if let reader = state.reader {
                state.reader = nil
                return reader
            }
            Self.enqueue(event, into: &state, limit: limit)
            return nil
        }
        reader?.resume(returning: event)
    }

    /// No more events: the reader gets what waits, then the end.
    package func finish() {
        let reader = state.withLock { state -> CheckedContinuation<RoomSession.Event?, any Error>? in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// The next event, nil at the end; throws `CancellationError` when the reading task is
    /// cancelled.
    package func next() async throws -> RoomSession.Event? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (reader: CheckedContinuation<RoomSession.Event?, any Error>) in
                let ready = state.withLock { state -> Result<RoomSession.Event?, any Error>? in
                    if let event = state.waiting.popFirst() { return .success(event) }
                    if state.finished { return .success(nil) }
                    // Checked under the lock: a cancellation after this finds the reader stored.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.reader = reader
                    return nil
                }
                if let ready { reader.resume(with: ready) }
            }
        } onCancel: {
            let reader = state.withLock { state in
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume(throwing: CancellationError())
        }
    }

    private static func enqueue(_ event: RoomSession.Event, into state: inout State, limit: Int) {
        switch event.kind {
        case .state:
            // Only a state after the last ordering event is stale: one before it stays.
            for index in state.waiting.indices.reversed() {
                let kind = state.waiting[index].kind
                if kind == .state {
                    state.waiting.remove(at: index)
                    state.replacedStates += 1
                    break
                }
                if kind == .ordering { break }
            }
        case .presence, .roundTrip, .connection:
            if let index = state.waiting.firstIndex(where: { $0.kind == event.kind }) { state.waiting.remove(at: index) }
        case .ordering:
            let ordering = state.waiting.lazy.filter { $0.kind == .ordering }.count
            if ordering >= limit, let oldest = state.waiting.firstIndex(where: { $0.kind == .ordering }) {
                state.waiting.remove(at: oldest)
                state.dropped += 1
            }
        }
        state.waiting.append(event)
    }
}

extension RoomSession.Event {
    /// How an event waits for a slow reader (see `RoomEvents`).
    fileprivate enum Kind { case state, presence, roundTrip, connection, ordering }

    fileprivate var kind: Kind {
        switch self {
        case .server(.state): .state
        case .server(.presence): .presence
        case .roundTrip: .roundTrip
        case .connection: .connection
        case .server: .ordering
        }
    }
}
