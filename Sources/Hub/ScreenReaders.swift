package import Access
import Bytes
import ScrollModel
import Synchronization
import TerminalFrames
import Transport

/// A room's terminal readers (`GET /rooms/NAME/tty`): its views per size (`RoomScreens`) and
/// its readers on each loop. The room's events reach it under the room's lock (`post`);
/// rendering happens on the hub's render thread; each frame goes to the loops that have
/// readers, where every reader of its size is given the same bytes in its conflation slot.
final class ScreenReaders: Sendable {
    let screens: RoomScreens
    let loops: [LoopScreens]
    private let renderer: ScreenRenderer

    init(room: String, events: [ServerEvent], loops: [EventLoop], sizeLimit: Int, renderer: ScreenRenderer) {
        screens = RoomScreens(room: room, sizeLimit: sizeLimit, events: events) { ScreenStream.chunk($0) }
        self.loops = loops.map { LoopScreens(loop: $0, counters: renderer.counters) }
        self.renderer = renderer
    }

    /// A change of the room, in order (under the room's lock).
    func post(_ event: ServerEvent) {
        if screens.post(event) { renderer.schedule(self) }
    }

    /// Adds a reader on its loop (under the room's lock): its size is the one the room gives
    /// it (`SizeTable`); its first frame is the newest of that size, or the first rendered.
    func add(_ member: RoomMember, wanted: ScreenSize, loop: EventLoop) {
        let (size, frame, schedule) = screens.addReader(wanted)
        member.peer.screenSize = size
        member.lastSeq = SeqMark(wrapping: 0)
        loops[loop.index].add(member, size: size)
        if let frame { loops[loop.index].post(frame) }
        if schedule { renderer.schedule(self) }
    }

    /// Removes a reader (on its loop, under the room's lock); true when the room has none left.
    func remove(_ member: RoomMember, loop: EventLoop) -> Bool {
        guard let size = member.peer.screenSize else { return false }
        loops[loop.index].remove(member, size: size)
        return screens.removeReader(size)
    }

    /// Closes every reader (the room became private), each on its loop.
    func closeAll(reason: String) {
        for local in loops where local.count.load(ordering: .relaxed) > 0 { local.loop.execute { local.closeAll(reason: reason) } }
    }

    /// The render thread's turn for this room.
    func render() {
        let frames = screens.render()
        renderer.counters.framesRendered.add(frames.count, ordering: .relaxed)
        for frame in frames {
            for local in loops where local.count.load(ordering: .relaxed) > 0 { local.post(frame) }
        }
    }
}

/// A room's terminal readers on one loop, by size, and the mailbox through which frames
/// reach them: a newer frame of a size replaces one still waiting, as states do for followers.
final class LoopScreens: @unchecked Sendable {
    let loop: EventLoop
    /// Readers here (any thread reads it to skip a loop without readers).
    let count = Atomic<Int>(0)
    private let counters: ScreenCounters
    /// Loop thread only.
    @exclusivity(unchecked) private var readers: [ScreenSize: [RoomMember]] = [:]
    private let mailbox = Mutex<(frames: [RoomScreens.Frame], scheduled: Bool)>(([], false))

    init(loop: EventLoop, counters: ScreenCounters) {
        self.loop = loop
        self.counters = counters
    }

    func add(_ member: RoomMember, size: ScreenSize) {
        member.slot = Int32(readers[size]?.count ?? 0)
        readers[size, default: []].append(member)
        count.add(1, ordering: .relaxed)
    }

    func remove(_ member: RoomMember, size: ScreenSize) {
        let slot = Int(member.slot)
        guard var list = readers[size], slot >= 0, slot < list.count, list[slot] === member else { return }
        readers[size] = nil  // the list alone holds its storage while it changes (no copy)
        let last = list.removeLast()
        if slot < list.count {
            list[slot] = last
            last.slot = Int32(slot)
        }
        member.slot = -1
        if !list.isEmpty { readers[size] = list }
        count.subtract(1, ordering: .relaxed)
    }

    /// Queues a frame for this loop's readers of its size (any thread).
    func post(_ frame: RoomScreens.Frame) {
        let wake = mailbox.withLock { box -> Bool in
            if let index = box.frames.firstIndex(where: { $0.size == frame.size }) {
                if box.frames[index].generation < frame.generation { box.frames[index] = frame }
            } else {
                box.frames.append(frame)
            }
            defer { box.scheduled = true }
            return !box.scheduled
        }
        if wake { loop.execute { [self] in drain() } }
    }

    private func drain() {
        let frames = mailbox.withLock { box -> [RoomScreens.Frame] in
            box.scheduled = false
            defer { box.frames.removeAll(keepingCapacity: true) }
            return box.frames
        }
        var sent = 0
        var conflated = 0
        var bytes = 0
        for frame in frames {
            guard let members = readers[frame.size] else { continue }
            for member in members where member.lastSeq.precedesWrapping(SeqMark(wrapping: frame.generation)) {
                member.lastSeq = SeqMark(wrapping: frame.generation)
                if member.peer.sendStream(frame: frame.bytes) { conflated += 1 }
                sent += 1
                bytes += frame.bytes.count
            }
        }
        counters.framesSent.add(sent, ordering: .relaxed)
        counters.bytesSent.add(bytes, ordering: .relaxed)
        if conflated > 0 { counters.framesConflated.add(conflated, ordering: .relaxed) }
    }

    /// Ends every reader's stream with `reason` (loop thread).
    func closeAll(reason: String) {
        for member in readers.values.flatMap({ $0 }) { member.peer.close(code: .policyViolation, reason: reason) }
    }
}
