import RoomKit
import Transport

/// The lease holder's node writes its led states into their rooms' hashes, coalesced
/// (`WriteBackQueue`): once a room rests, at most once a second while it moves, and at once
/// before a control change; dropped when the lease is lost. Rooms due together go in one script
/// call. All on the engine's loop.
extension RedisRoomEngine {
    /// Looks for due write-backs every `WriteBackQueue.checkNanoseconds` while any waits.
    func scheduleWriteBack() {
        guard !unwritten.checkScheduled, !unwritten.isEmpty else { return }
        unwritten.checkScheduled = true
        loop.schedule(after: WriteBackQueue.checkNanoseconds) { [weak self] in self?.writeBackDue() }
    }

    /// Rooms written back in one script call at most (where rooms' keys may meet in one call:
    /// not on a Redis Cluster, whose scripts keep to one slot). Redis CPU per room written,
    /// 1,024 rooms: 6.6 – 7.1 – 8.7 µs one a call, 4.3 – 4.4 – 4.7 µs 16 a call (some 70 µs
    /// that Redis runs nothing else), 3.1 – 4.1 – 4.2 µs 64 a call (docs/benchmarks-log.md).
    static let writeBackBatch = 16

    private func writeBackDue() {
        unwritten.checkScheduled = false
        guard isAvailable else { return unwritten.removeAll() }
        let due = unwritten.takeDue(now: loop.now)
        var start = due.startIndex
        while start < due.endIndex {
            let end = sharded ? start + 1 : min(start + Self.writeBackBatch, due.endIndex)
            writeBack(due[start..<end])
            start = end
        }
        scheduleWriteBack()
    }

    /// Writes `room`'s newest led state into its hash now, if one waits.
    func writeBack(room: String) {
        guard let state = unwritten.take(room: room) else { return }
        writeBack([(room, state)])
    }

    private func writeBack(_ rooms: some Collection<(room: String, state: WriteBackQueue.Pending)>) {
        // Compared on `seq` and the lease in Redis: a write that lands late (this node lost the
        // lease since) never takes the hash back below the new holder's state.
        var keys = [[UInt8]](), arguments = [[UInt8]]()
        keys.reserveCapacity(2 * rooms.count)
        arguments.reserveCapacity(3 * rooms.count)
        for (room, state) in rooms {
            let k = self.keys(room)
            keys += [Array(k.hash.utf8), Array(k.lease.utf8)]
            arguments += [Array(String(state.seq).utf8), stateSuffix(state.message), Array(state.by.utf8)]
        }
        commands.send([Array("EVAL".utf8), Array(Scripts.writeBack.utf8), Array(String(keys.count).utf8)] + keys + arguments)
    }

    /// This node no longer holds `room`'s lease: its led state waiting to be written back is
    /// dropped (the new holder's node writes the room's newest; docs/cluster.md, divergence 2).
    public func forgetLed(room: String) {
        loop.execute { [self] in _ = unwritten.take(room: room) }
    }
}
