import Logging
import ScrollModel
import Synchronization
import Transport

/// Sharing rooms between nodes: what the engine (Redis) brings back, adopted by the same rules
/// as a client's changes, and what this node keeps up (leases, counts, reconciling after an
/// outage).
extension LocalRoomHub: SharedRoomsDelegate {
    /// A room fetched from the engine (or nil: serve it here alone); waiting joins go on.
    func attached(_ room: Room, snapshot: RoomSnapshot?) {
        let waiting = room.guarded.withLock { guarded in
            guarded.attached = true
            if let snapshot { adopt(snapshot, in: &guarded, room: room) }
            defer { guarded.waiting = [] }
            return guarded.waiting
        }
        for join in waiting { join() }
    }

    /// Takes what the engine holds: newer state, another document, the driver, the key
    /// and other nodes' counts; members hear what changed.
    private func adopt(_ snapshot: RoomSnapshot, in guarded: inout Room.Guarded, room: Room) {
        guard let loop = loops.first else { return }
        if let creator = guarded.creator, snapshot.state != nil || snapshot.driver != nil || snapshot.keyDigest != nil {
            guarded.creator = nil  // presented on another node: claimed
            creationLimits.settled(address: creator)
        }
        // The engine's count, even if lower: a Redis that restarted empty counts from 0 again.
        guarded.machine.version = snapshot.version
        var broadcasts = [Broadcast]()
        if let key = snapshot.keyDigest { guarded.core.adopt(presenterKey: key) }
        if let record = snapshot.followKey, record != guarded.core.followKey {
            guarded.core.adopt(followKey: record)
            evictFollowers(in: &guarded, room: room)
        }
        if let document = snapshot.document, document.fingerprint != guarded.core.document?.fingerprint {
            // Held to this node's budget for documents, as a client's document is.
            if let refusal = documents.reserve(DocumentBudget.growth(replacing: guarded.core.document, with: document.text)) {
                engine?.refused(SharedInput.Refusal(reason: .invalid, detail: "a document: \(refusal.message)"), room: room.name)
            } else {
                guarded.core.adopt(document: document)
                broadcasts.append(.document(document))
            }
        }
        if let state = snapshot.state, guarded.core.adopt(state: state) { broadcasts.append(.state(state)) }
        let driver = snapshot.driver.flatMap(SessionID.init)
        if driver != guarded.core.driver || (driver != nil && snapshot.driverName != guarded.core.driverName) {
            guarded.core.adopt(driver: driver, name: snapshot.driverName)
            broadcasts.append(.driver(driver, name: snapshot.driverName))
        }
        publish(broadcasts, in: &guarded, room: room, loop: loop)
        let now = loop.now
        let remote = snapshot.nodes.mapValues { (presence: $0, at: now) }
        if remote.mapValues(\.presence) != guarded.remote.mapValues(\.presence) {
            guarded.remote = remote
            presenceChanged(in: &guarded, room: room, loop: loop)
        }
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
        engine.attach(room: room.name) { [self] snapshot in
            room.guarded.withLock { guarded in
                guarded.resyncing = false
                if let snapshot, !guarded.removed { adopt(snapshot, in: &guarded, room: room) }
            }
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
        guard available, let engine else { return }
        // Back after an outage (or first connected): merge what each room did here alone.
        let all = rooms.withLock { Array($0) }
        for (name, room) in all {
            let local = room.guarded.withLock { guarded -> RoomSnapshot? in
                guard guarded.attached else { return nil }
                guarded.announce = true
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
            guard let local else { continue }
            engine.reconcile(room: name, local: local) { [self] snapshot in
                guard let snapshot else { return }
                room.guarded.withLock { guarded in
                    adopt(snapshot, in: &guarded, room: room)
                    if let engine = self.engine { engine.presence(room: name, counts: guarded.core.presence) }
                }
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
        let lifetime = UInt64(RedisRoomEngine.presenceLifetimeMilliseconds) * 1_000_000
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

