import Logging
package import RoomKit
import ScrollModel
import Synchronization
import Transport

/// Sharing rooms between nodes: what the engine (Redis) brings back, adopted by the same rules
/// as a client's changes, and what this node keeps up (leases, counts, reconciling after an
/// outage).
extension LocalRoomHub {
    /// A room fetched from the engine (or nil: serve it here alone); waiting joins go on.
    func attached(_ room: Room, snapshot: RoomSnapshot?) {
        guard let loop = homeLoop else { return }
        let (waiting, _) = withRoom(room, on: loop) { guarded, steps in
            guarded.attached = true
            if let snapshot { adopt(snapshot, as: .snapshot(snapshot), in: &guarded, &steps) }
            defer { guarded.waiting = [] }
            return guarded.waiting
        }
        for join in waiting { join() }
    }

    /// The room's machine takes what the engine holds (`event`: `.snapshot` or `.merged`); the
    /// hub takes the other nodes' member counts.
    private func adopt(_ snapshot: RoomSnapshot, as event: Room.Machine.Event, in guarded: inout Room.Guarded, _ steps: inout Steps) {
        let loop = steps.loop
        step(event, in: &guarded, &steps)
        let now = loop.now
        let remote = snapshot.nodes.mapValues { (presence: $0, at: now) }
        if remote.mapValues(\.presence) != guarded.remote.mapValues(\.presence) {
            guarded.remote = remote
            presenceChanged(in: &guarded, room: steps.room, loop: loop)
        }
    }

    package func shared(room name: String, version: Int, change: SharedChange) {
        guard let room = rooms.withLock({ $0[name] }), let loop = homeLoop else { return }
        // Members hear the change as any other: encoded once here, by `publish`.
        withRoom(room, on: loop) { guarded, steps in
            if guarded.attached { step(.shared(version: version, change), in: &guarded, &steps) }
        }
    }

    package func shared(room name: String, led state: ScrollState) {
        guard let room = rooms.withLock({ $0[name] }), let loop = homeLoop else { return }
        withRoom(room, on: loop) { guarded, steps in
            if guarded.attached { step(.led(state), in: &guarded, &steps) }
        }
    }

    /// Every node that holds the room answers (not only the lease holder's, which may have
    /// died with the newest state not yet in the hash): receivers take a state once, from the
    /// room's driver, above their `seq`. When and what each node answers is the room's rule
    /// (`RoomMachine.Event.stateWanted`). Called on the engine's loop, the first.
    package func sharedStateWanted(room name: String) {
        guard engine != nil, let room = rooms.withLock({ $0[name] }), let loop = homeLoop else { return }
        withRoom(room, on: loop) { guarded, steps in
            if guarded.attached { step(.stateWanted(now: loop.now), in: &guarded, &steps) }
        }
    }

    /// A change heard here was overtaken before it could be confirmed: the room is fetched
    /// again, and takes no led state until then (`RoomMachine.Event.changesMissed`).
    package func sharedChangesMissed(room name: String) {
        guard let room = rooms.withLock({ $0[name] }), let loop = homeLoop else { return }
        withRoom(room, on: loop) { guarded, steps in
            if guarded.attached { step(.changesMissed, in: &guarded, &steps) }
        }
    }

    /// The interval after a question ended: the lease holder's node orders its driver's state
    /// again (`leadAgain`), if it still leads.
    func orderAgain(_ room: Room) {
        guard let loop = homeLoop else { return }
        withRoom(room, on: loop) { guarded, steps in
            if guarded.attached, !guarded.removed { step(.orderAgain(now: loop.now), in: &guarded, &steps) }
        }
    }

    /// A take or a claim whose outcome the room waits for (`RoomMachine.ControlWait`): its
    /// answer, and its deadline, are stepped on `loop` (the taker's, or the joining presenter's).
    func orderControl(_ action: ControlAction, ticket: Int, room: Room, loop: EventLoop) {
        engine?.control(room: room.name, action) { [self] result in
            loop.execute { [self] in step(.controlAnswered(ticket: ticket, result), in: room, on: loop) }
        }
        loop.schedule(after: SharedTiming.controlOutcomeNanoseconds) { [weak self] in
            self?.step(.controlOverdue(ticket: ticket), in: room, on: loop)
        }
    }

    /// Fetches a room's hash again and takes what it holds (validated like every input); at
    /// most once a second per room, the rest at the next tick.
    func resyncRoom(_ room: Room, now: UInt64) {
        guard let engine else { return }
        let start = room.guarded.withLock { guarded -> Bool in
            guard !guarded.resyncing else { return false }
            if let last = guarded.resyncedAt, elapsedNanoseconds(from: last, to: now) < 1_000_000_000 {
                guarded.resyncDue = true
                return false
            }
            guarded.resyncing = true
            guarded.resyncDue = false
            guarded.resyncedAt = now
            return true
        }
        guard start else { return }
        counters.refetches.add(1, ordering: .relaxed)
        engine.attach(room: room.name) { [self] snapshot in
            guard let loop = homeLoop else { return }
            withRoom(room, on: loop) { guarded, steps in
                guarded.resyncing = false
                guard let snapshot, !guarded.removed else { return }
                adopt(snapshot, as: .snapshot(snapshot), in: &guarded, &steps)
            }
        }
    }

    package func shared(room name: String, node: String, presence: Presence) {
        guard let room = rooms.withLock({ $0[name] }), let loop = loops.first else { return }
        room.guarded.withLock { guarded in
            guard guarded.attached else { return }
            if presence == Presence() {
                guard guarded.remote.removeValue(forKey: node) != nil else { return }
            } else if guarded.remote[node] == nil && guarded.remote.count >= SharedInput.maxNodes {
                return  // more nodes than any deployment runs: someone else writes on the channel
            } else {
                let changed = guarded.remote[node]?.presence != presence
                guarded.remote[node] = (presence, loop.now)
                guard changed else { return }
            }
            presenceChanged(in: &guarded, room: room, loop: loop)
        }
    }

    package func sharedAvailability(_ available: Bool) {
        guard available else { return }
        // Back after an outage (or first connected): merge what each room did here alone.
        let all = rooms.withLock { Array($0) }
        guard let loop = homeLoop else { return }
        for (name, room) in all { reconcile(room, name: name, on: loop) }
    }

    /// Merges what `room` did here alone into the shared room, and takes what comes back.
    /// `loop`: the caller's (a join's, which found the engine back, or the engine's); the
    /// engine's answer is taken on the room's home loop.
    func reconcile(_ room: Room, name: String, on loop: EventLoop) {
        guard let engine, let home = homeLoop else { return }
        let (local, _) = withRoom(room, on: loop) { guarded, steps -> RoomSnapshot? in
            guard guarded.attached else { return nil }
            guarded.announce = true
            step(.merging, in: &guarded, &steps)
            var local = RoomSnapshot()
            local.state = guarded.machine.newestState
            local.document = guarded.core.document
            local.keyDigest = guarded.core.presenterKeyText
            local.followKey = guarded.core.followKey
            if let driver = guarded.core.driver, guarded.core.members[driver] != nil {
                local.driver = driver.description
                local.driverName = guarded.core.names[driver]
                // The state goes as it was ordered: the engine publishes it under this driver
                // when the merge keeps it driving, and writes it unchanged otherwise.
            }
            return local
        }
        guard let local else { return }
        engine.reconcile(room: name, local: local) { [self] snapshot in
            withRoom(room, on: home) { guarded, steps in
                guard let snapshot else {
                    step(.merged(nil), in: &guarded, &steps)
                    return
                }
                adopt(snapshot, as: .merged(snapshot), in: &guarded, &steps)
                self.engine?.presence(room: name, counts: guarded.core.presence)
            }
        }
    }

    /// Every tick: fetch the rooms whose fetch waited (`resyncRoom`), renew the leases of
    /// drivers connected here, take over control from a driver whose node died (its lease
    /// expired) for a presenter here, forget counts of nodes that stopped saying them, and say
    /// this node's counts again every 5 s.
    func keepShared() {
        guard let engine, engine.isAvailable, let loop = loops.first else { return }
        let heartbeat = ticks.add(1, ordering: .relaxed).newValue % 5 == 0
        let lifetime = UInt64(SharedTiming.presenceLifetimeMilliseconds) * 1_000_000
        let all = rooms.withLock { Array($0) }
        for (name, room) in all {
            let (resyncDue, _) = withRoom(room, on: loop) { guarded, steps -> Bool in
                guard guarded.attached, !guarded.removed else { return false }
                step(.keepLease, in: &guarded, &steps)
                if heartbeat { step(.checkLapse, in: &guarded, &steps) }
                let core = guarded.core
                if heartbeat && !core.isEmpty { engine.presence(room: name, counts: core.presence) }
                let before = guarded.remote.count
                guarded.remote = guarded.remote.filter { elapsedNanoseconds(from: $0.value.at, to: loop.now) < lifetime }
                if guarded.remote.count != before { presenceChanged(in: &guarded, room: room, loop: loop) }
                return guarded.resyncDue
            }
            // A fetch that waited for the once-a-second limit goes now.
            if resyncDue { resyncRoom(room, now: loop.now) }
        }
    }
}


/// The hub as its engine hears it (`SharedRoomsDelegate`), so that RoomKit's protocol stays
/// out of SyncServer's public API (`LocalRoomHub` is public, the engine is the package's own).
/// The engine holds it weakly, as it held the hub; it holds the hub weakly too.
final class SharedRoomsBridge: SharedRoomsDelegate, @unchecked Sendable {
    /// Set once, before the engine is told of the bridge (a weak reference loads atomically).
    weak var hub: LocalRoomHub?

    func shared(room: String, version: Int, change: SharedChange) { hub?.shared(room: room, version: version, change: change) }
    func shared(room: String, led state: ScrollState) { hub?.shared(room: room, led: state) }
    func sharedStateWanted(room: String) { hub?.sharedStateWanted(room: room) }
    func sharedChangesMissed(room: String) { hub?.sharedChangesMissed(room: room) }
    func shared(room: String, node: String, presence: Presence) { hub?.shared(room: room, node: node, presence: presence) }
    func sharedAvailability(_ available: Bool) { hub?.sharedAvailability(available) }
}
