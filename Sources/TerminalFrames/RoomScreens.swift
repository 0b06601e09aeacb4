import Bytes
import ScrollModel
import Synchronization
import TerminalUI

/// One room's follower view at every size its terminal readers use (`GET /rooms/NAME/tty`):
/// the same model and `view` that `scrollsync follow` runs (wrapping by display width, the
/// pinned section header, the status line), kept per size and rendered once per change of
/// the room for all readers of that size. The room's events come in order from any thread
/// (`post`, under the room's lock: cheap, no rendering); `render` runs them, on a thread
/// that is not an event loop's, and returns each size's new frame, encoded once.
public final class RoomScreens: Sendable {
    /// A size's view, rendered and encoded (`encode`): shared by every reader of that size.
    public struct Frame: Sendable {
        public let size: ScreenSize
        /// One more with each render of the room: a reader takes a frame only when it is
        /// newer than the last it took (frames reach a reader by more than one way).
        public let generation: Int
        public let bytes: SharedBytes
    }

    private struct Pending {
        var events: [ServerEvent] = []
        var sizes: SizeTable
        /// A render is queued and has not started.
        var scheduled = false
        /// The newest frame of each size, for a reader that comes after it.
        var latest: [ScreenSize: Frame] = [:]
    }

    /// What only the render thread touches (behind a lock all the same: it is never contended).
    private struct Views {
        /// The newest event of each kind: what a size's first model is made from.
        var document: ServerEvent?
        var driver: ServerEvent?
        var presence: ServerEvent?
        var state: ServerEvent?
        var models: [ScreenSize: ViewerModel] = [:]
        var screens: [ScreenSize: Screen] = [:]
        var generation = 0

        mutating func note(_ event: ServerEvent) {
            switch event {
            case .document: document = event
            case .driver: driver = event
            case .presence: presence = event
            case .state: state = event
            case .welcome, .error: break
            }
        }
    }

    public let room: String
    private let pending: Mutex<Pending>
    private let views: Mutex<Views>
    private let encode: @Sendable (String) -> SharedBytes
    /// Frames rendered (one per size per change) and changes that left a size's view as it was.
    public let framesRendered = Atomic<Int>(0)
    public let framesUnchanged = Atomic<Int>(0)

    /// - Parameters: `events`: the room as it is now (its document, driver, presence and
    ///   state, in that order); `sizeLimit`: distinct sizes rendered (`SizeTable`); `encode`:
    ///   a frame's text (`Screen.frame`) as the bytes every reader of its size is sent.
    public init(room: String, sizeLimit: Int, events: [ServerEvent], encode: @escaping @Sendable (String) -> SharedBytes) {
        self.room = room
        self.encode = encode
        pending = Mutex(Pending(sizes: SizeTable(limit: sizeLimit)))
        var views = Views()
        for event in events { views.note(event) }
        self.views = Mutex(views)
    }

    /// Queues a change of the room (in the room's order). A newer state or presence takes the
    /// place of one still queued right before it. True when a render must be scheduled.
    public func post(_ event: ServerEvent) -> Bool {
        pending.withLock { pending in
            switch (pending.events.last, event) {
            case (.state?, .state), (.presence?, .presence): pending.events[pending.events.count - 1] = event
            default: pending.events.append(event)
            }
            return schedule(&pending)
        }
    }

    /// Counts a reader asking for `wanted`: the size it gets, the newest frame of that size if
    /// there is one yet, and whether a render must be scheduled (its size is new).
    public func addReader(_ wanted: ScreenSize) -> (size: ScreenSize, frame: Frame?, schedule: Bool) {
        pending.withLock { pending in
            let size = pending.sizes.add(wanted)
            if let frame = pending.latest[size] { return (size, frame, false) }
            return (size, nil, schedule(&pending))
        }
    }

    /// A reader of `size` left; true when the room has no reader left.
    public func removeReader(_ size: ScreenSize) -> Bool {
        pending.withLock { pending in
            pending.sizes.remove(size)
            if pending.sizes.readers[size] == nil { pending.latest[size] = nil }
            return pending.sizes.readers.isEmpty
        }
    }

    /// Readers by size (metrics, tests).
    public var readers: [ScreenSize: Int] { pending.withLock { $0.sizes.readers } }

    private func schedule(_ pending: inout Pending) -> Bool {
        defer { pending.scheduled = true }
        return !pending.scheduled
    }

    /// Applies the queued changes to every size's view and renders each size whose view they
    /// changed (and each new size): one frame per size, whatever its number of readers. Call
    /// from one thread at a time, never an event loop's.
    public func render() -> [Frame] {
        let (events, sizes) = pending.withLock { pending in
            pending.scheduled = false
            defer { pending.events.removeAll(keepingCapacity: true) }
            return (pending.events, pending.sizes.readers)
        }
        let frames = views.withLock { views -> [Frame] in
            for event in events {
                views.note(event)
                for size in views.models.keys { _ = update(&views.models[size]!, .server(event)) }
            }
            for size in views.models.keys where sizes[size] == nil {
                views.models[size] = nil
                views.screens[size] = nil
            }
            var changed = [(ScreenSize, Screen)]()
            for size in sizes.keys {
                if views.models[size] == nil { views.models[size] = firstModel(size, views) }
                let screen = view(views.models[size]!)
                if screen == views.screens[size] {
                    framesUnchanged.add(1, ordering: .relaxed)
                    continue
                }
                views.screens[size] = screen
                changed.append((size, screen))
            }
            guard !changed.isEmpty else { return [] }
            views.generation += 1
            let generation = views.generation
            return changed.map { Frame(size: $0.0, generation: generation, bytes: encode($0.1.frame)) }
        }
        framesRendered.add(frames.count, ordering: .relaxed)
        guard !frames.isEmpty else { return [] }
        pending.withLock { pending in
            for frame in frames where pending.sizes.readers[frame.size] != nil {
                if (pending.latest[frame.size]?.generation ?? 0) < frame.generation { pending.latest[frame.size] = frame }
            }
        }
        return frames
    }

    /// A follower's model at `size` that has seen the room as it is now.
    private func firstModel(_ size: ScreenSize, _ views: Views) -> ViewerModel {
        var model = ViewerModel.follower(room: room, localDocument: nil, width: size.columns, height: size.rows, readsKeys: false)
        _ = update(&model, .connection(.connected))
        for case let event? in [views.document, views.driver, views.presence, views.state] { _ = update(&model, .server(event)) }
        return model
    }
}
