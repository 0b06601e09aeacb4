import Logging
import RoomKit
import ScrollModel
import Synchronization
import Transport

/// Sharing rooms between nodes: what the engine (Redis) brings back, adopted by the same rules
/// as a client's changes, and what this node keeps up (leases, counts, reconciling after an
/// outage).
extension LocalRoomHub: SharedRoomsDelegate {
    /// A room fetched from the engine (or nil: serve it here alone); waiting joins go on.
    func attached(_ room: Room, snapshot: RoomSnapshot?) {
        let (waiting, later) = room.guarded.withLock { guarded in
            guarded.attached = true
            let later = snapshot.map { adopt($0, as: .snapshot($0), in: &guarded, room: room) } ?? []
            defer { guarded.waiting = [] }
            return (guarded.waiting, later)
        }
        finish(later, room: room)
        for join in waiting { join() }
    }

    /// The room's machine takes what the engine holds (`event`: `.snapshot` or `.merged`); the
    /// hub settles the creator's count and takes the other nodes' member counts. Returns what
    /// `finish` does.
    private func adopt(_ snapshot: RoomSnapshot, as event: Room.Machine.Event, in guarded: inout Room.Guarded,
                       room: Room) -> [Room.Machine.Effect] {
        guard let loop = loops.first else { return [] }
        if let creator = guarded.creator, snapshot.state != nil || snapshot.driver != nil || snapshot.keyDigest != nil {
            guarded.creator = nil  // presented on another node: claimed
            creationLimits.settled(address: creator)
        }
        let later = step(event, in: &guarded, room: room, loop: loop)
        let now = loop.now
        let remote = snapshot.nodes.mapValues { (presence: $0, at: now) }
        if remote.mapValues(\.presence) != guarded.remote.mapValues(\.presence) {
            guarded.remote = remote
            presenceChanged(in: &guarded, room: room, loop: loop)
        }
        return later
    }

    public func shared(room name: String, version: Int, change: SharedChange) {
        guard let room = rooms.withLock({ $0[name] }), let loop = loops.first else { return }
        // Members hear the change as any other: encoded once here, by `publish`.
        let effects = room.guarded.withLock { guarded -> [Room.Machine.Effect] in
            guard guarded.attached else { return [] }
            return step(.shared(version: version, change), in: &guarded, room: room, loop: loop)
        }
        finish(effects, room: room)
    }

    public func shared(room name: String, led state: ScrollState) {
        guard let room = rooms.withLock({ $0[name] }), let loop = loops.first else { return }
        let effects = room.guarded.withLock { guarded -> [Room.Machine.Effect] in
            guard guarded.attached else { return [] }
            return step(.led(state), in: &guarded, room: room, loop: loop)
        }
        finish(effects, room: room)
    }

    /// Every node that holds the room answers (not only the lease holder's, which may have
    /// died with the newest state not yet in the hash): receivers take a state once, from the
    /// room's driver, above their `seq`. The lease holder's node orders its state again
    /// (`orderAgain`: kept in the hash, and above what the asking node's merge published), at
    /// most once per write-back interval: anyone who can publish on the channel can ask, and a
    /// flood of questions must not become a flood of states to the members; a question within
    /// the interval gets the state as it is now, and one more ordering at the interval's end
    /// (several nodes merging at once each need one above what the others published).
    /// The other nodes pass their state on as it is. Called on the engine's loop, the first.
    public func sharedStateWanted(room name: String) {
        guard let engine, let room = rooms.withLock({ $0[name] }), let loop = loops.first else { return }
        let (passOn, keep) = room.guarded.withLock { guarded -> (ScrollState?, Bool) in
            guard guarded.attached, let state = guarded.core.state else { return (nil, false) }
            let interval = SharedTiming.writeBackNanoseconds
            guard guarded.machine.driverLeadsHere else {
                // Another node's driver, or none: this node passes its state on at most once per
                // interval, however often it is asked (issue 46.7: every node answering every
                // `Q` made answers grow with the questions). It still answers when the lease
                // holder's node has died and cannot.
                if let last = guarded.passedOnAt, elapsedNanoseconds(from: last, to: loop.now) < interval { return (nil, false) }
                guarded.passedOnAt = loop.now
                return (state, false)
            }
            let elapsed = guarded.orderedAgainAt.map { elapsedNanoseconds(from: $0, to: loop.now) }
            guard let elapsed, elapsed < interval else { return (nil, true) }
            if !guarded.orderAgainScheduled {
                guarded.orderAgainScheduled = true
                loop.schedule(after: interval - elapsed) { [weak self] in self?.orderAgain(room) }
            }
            return (state, true)
        }
        if let passOn {
            engine.publish(led: ServerMessage.state(passOn), seq: passOn.seq, room: name, keep: keep)
        } else if keep {
            orderAgain(room)
        }
    }

    /// The lease holder's node orders its driver's state again (`leadAgain`), if it still leads.
    private func orderAgain(_ room: Room) {
        guard let loop = loops.first else { return }
        let later = room.guarded.withLock { guarded -> [Room.Machine.Effect] in
            guarded.orderAgainScheduled = false
            guard guarded.attached, !guarded.removed else { return [] }
            guarded.orderedAgainAt = loop.now
            return step(.leadAgain, in: &guarded, room: room, loop: loop)
        }
        finish(later, room: room)
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
            let later = room.guarded.withLock { guarded -> [Room.Machine.Effect] in
                guarded.resyncing = false
                guard let snapshot, !guarded.removed else { return [] }
                return adopt(snapshot, as: .snapshot(snapshot), in: &guarded, room: room)
            }
            finish(later, room: room)
        }
    }

    public func shared(room name: String, node: String, presence: Presence) {
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

    public func sharedAvailability(_ available: Bool) {
        guard available else { return }
        // Back after an outage (or first connected): merge what each room did here alone.
        let all = rooms.withLock { Array($0) }
        for (name, room) in all { reconcile(room, name: name) }
    }

    /// Merges what `room` did here alone into the shared room, and takes what comes back.
    func reconcile(_ room: Room, name: String) {
        guard let engine else { return }
        let local = room.guarded.withLock { guarded -> RoomSnapshot? in
            guard guarded.attached, let loop = loops.first else { return nil }
            guarded.announce = true
            _ = step(.merging, in: &guarded, room: room, loop: loop)
            var local = RoomSnapshot()
            local.state = guarded.core.state
            local.document = guarded.core.document
            local.keyDigest = guarded.core.presenterKeyText
            local.followKey = guarded.core.followKey
            if let driver = guarded.core.driver, guarded.core.members[driver] != nil {
                local.driver = driver.description
                local.driverName = guarded.core.names[driver]
            }
            return local
        }
        guard let local else { return }
        engine.reconcile(room: name, local: local) { [self] snapshot in
            let later = room.guarded.withLock { guarded -> [Room.Machine.Effect] in
                guard let snapshot else {
                    guard let loop = loops.first else { return [] }
                    return step(.merged(nil), in: &guarded, room: room, loop: loop)
                }
                defer { if let engine = self.engine { engine.presence(room: name, counts: guarded.core.presence) } }
                return adopt(snapshot, as: .merged(snapshot), in: &guarded, room: room)
            }
            finish(later, room: room)
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
            let resyncDue = room.guarded.withLock { guarded -> Bool in
                guard guarded.attached, !guarded.removed else { return false }
                let core = guarded.core
                if let driver = core.driver {
                    if core.members[driver] != nil {
                        engine.control(room: name, .renew(session: driver.description)) { _ in }
                    } else if let id = core.members.firstID(where: { $0.role == .presenter }) {
                        engine.control(room: name, .inherit(session: id.description, name: core.names[id], stale: driver.description)) { _ in }
                    } else if heartbeat {
                        // Nobody here to inherit it: if the driver's lease lapsed (its node died),
                        // every node is told the room is undriven (at most every 5 s per room).
                        engine.control(room: name, .lapse(stale: driver.description)) { _ in }
                    }
                }
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

