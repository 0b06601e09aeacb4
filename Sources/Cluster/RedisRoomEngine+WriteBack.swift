import RoomKit
import Transport

/// The lease holder's node writes its led states into their rooms' hashes, coalesced
/// (`WriteBackQueue`): once a room rests, at most once a second while it moves, and at once
/// before a control change; dropped when the lease is lost. All on the engine's loop.
extension RedisRoomEngine {
    /// Looks for due write-backs every `WriteBackQueue.checkNanoseconds` while any waits.
    func scheduleWriteBack() {
        guard !unwritten.checkScheduled, !unwritten.isEmpty else { return }
        unwritten.checkScheduled = true
        loop.schedule(after: WriteBackQueue.checkNanoseconds) { [weak self] in self?.writeBackDue() }
    }

    private func writeBackDue() {
        unwritten.checkScheduled = false
        guard isAvailable else { return unwritten.removeAll() }
        for (room, state) in unwritten.takeDue(now: loop.now) { writeBack(room: room, state) }
        scheduleWriteBack()
    }

    /// Writes `room`'s newest led state into its hash now, if one waits.
    func writeBack(room: String) {
        guard let state = unwritten.take(room: room) else { return }
        writeBack(room: room, state)
    }

    private func writeBack(room: String, _ state: WriteBackQueue.Pending) {
        // Compared on `seq` and the lease in Redis: a write that lands late (this node lost the
        // lease since) never takes the hash back below the new holder's state.
        let k = keys(room)
        commands.send([Array("EVAL".utf8), Array(Scripts.writeBack.utf8), Array("2".utf8), Array(k.hash.utf8), Array(k.lease.utf8),
                       Array(String(state.seq).utf8), stateSuffix(state.message), Array(state.by.utf8)])
    }

    /// This node no longer holds `room`'s lease: its led state waiting to be written back is
    /// dropped (the new holder's node writes the room's newest; docs/cluster.md, divergence 2).
    public func forgetLed(room: String) {
        loop.execute { [self] in _ = unwritten.take(room: room) }
    }
}
