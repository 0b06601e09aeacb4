import ScrollModel

/// What the engine brings and what the lease holder's node orders: changes in version order,
/// led states, snapshots, checked as a member's change is.
extension RoomMachine {
    /// The driver's scroll on the lease holder's node: numbered here (one above the newest this
    /// node ordered or adopted; a new lease's first state, or the first after the room was
    /// fetched again, leaps: `leap(above:)`), shown to members here at once and published. Its
    /// echo on the room's channel adds nothing here. One ordered after Redis moved the lease (this
    /// node had not heard yet) is taken on every other node as the room's last place while the new
    /// driver has not moved, and the new driver's node orders that place again under its driver
    /// (`takeLastPlace`), so all end on one; once the new driver moved, its states leap above it
    /// (docs/cluster.md, divergence 1). Members here waiting for the echo, a Redis round trip,
    /// made followers on other nodes later too: on one core, the holder's node fell behind on
    /// its subscription (docs/benchmarks-log.md, "The staleness regression through two nodes").
    mutating func lead(_ update: ScrollUpdate, from id: SessionID, sender: Sender, _ context: Context) -> [Effect] {
        if waitsForMerge(id) {
            heldForMerge = (update, id, sender)  // a newer scroll replaces the one waiting
            return []
        }
        let own = orderedHere?.by == id.description ? orderedHere : nil
        var state: ScrollState
        switch core.proposeScroll(update, from: id, after: .some(own ?? core.state)) {
        case .failure(let error): return [.refuse(error, to: sender)]
        case .success(let next): state = next
        }
        // Also when this node holds no state yet: another node may have numbered one it did not
        // hear (seen by the simulation: two drivers' states under `seq` 1, seed 76).
        let leaps = leapsNextLead || (own == nil && core.state.map { $0.by != state.by } == true)
        let above = max(core.lastSeq, own?.seq ?? 0)
        state.seq = leaps ? leap(above: above, context) : above + 1
        leapsNextLead = false
        proposed = nil
        orderedHere = state
        guard core.adopt(state: state) else { return [.publishLed(state)] }
        return [.broadcast(.state(state)), .publishLed(state)]  // (`carryOut` encodes it once for both)
    }

    /// Another node asked for the newest state: the lease holder's node orders its driver's
    /// own place again (not an older one another node's merge published above it), one above
    /// the room's `seq` (a leap after a fetch).
    /// Ordered under the current lease: `by` is its driver (whose own place, if it moved under
    /// this lease, or the room's place passed on to it), above everything this node ordered;
    /// heard here when it comes back on the channel (rare: a round trip costs nothing here, and
    /// the channel's order then decides it alike on every node). Not while a merge
    /// is on its way: it publishes the driver's place itself, numbered by the script from the
    /// same `seq` clock (seed 42381: two places under one `seq`); the driver's scrolls wait then
    /// too (`waitsForMerge`).
    mutating func leadAgain(_ context: Context) -> [Effect] {
        guard !merging, driverLeadsHere, let driver = core.driver, var state = orderedHere ?? core.state else { return [] }
        let own = orderedHere != nil
        state.by = driver.description
        let above = max(core.lastSeq, orderedHere?.seq ?? 0)
        state.seq = leapsNextLead || !own ? leap(above: above, context) : above + 1
        leapsNextLead = false
        orderedHere = state
        return [.publishLed(state)]
    }

    /// The first state under a new lease (or after the room was fetched again): `handoverLeap`
    /// above `seq`, and at least the `seq` clock (`Context.seqNow`). The leap keeps it above what
    /// the previous holder's node sent before it heard of the change; the clock keeps it above
    /// states this node never heard (ordered under a lease whose node died, or was paused, before
    /// they reached the hash; a new driver's leap from a hash that lags them numbered its states
    /// alike: docs/cluster.md §7.12). Every lease starts later than the one before it, and
    /// numbers fewer states than microseconds pass.
    func leap(above seq: Int, _ context: Context) -> Int {
        max(seq + Self.handoverLeap, context.seqNow)
    }

    /// The highest `seq` a state from another node may have before it is taken for one that
    /// cannot follow the room's (a fetch instead): `SeqReservation.block` above the room's, or as
    /// far as the `seq` clock (a new lease's first state) and the clocks' disagreement allow.
    func plausibleSeq(_ context: Context) -> Int {
        SharedTiming.plausibleSeq(above: core.lastSeq, seqNow: context.seqNow)
    }

    /// A led state: from the driver this node knows (one from a node that lost the lease to
    /// another driver and did not know yet is the room's last place at most: `takeLastPlace`),
    /// or any while nobody drives (the last driver's newest, passed on by a node that holds it);
    /// newer than the room's, and not leaping implausibly far.
    mutating func takeLed(_ state: ScrollState, _ context: Context) -> [Effect] {
        // After missed changes the driver known here may be stale (seed 81: a node paused
        // through two hand-overs took its own driver's state ordered under a lost lease): led
        // states wait for the snapshot, which hands on those of its driver.
        guard !missedChanges else { return [] }
        if let driver = core.driver, state.by != driver.description { return takeLastPlace(state, context) }
        // Above the state members hold, not the room's `seq` base (a new hash's): a state
        // ordered before the base is still the room's newest where nothing newer was ordered
        // (seed 23: a node back after Redis restarted empty takes the state others pass on).
        guard core.driver.map({ state.by == $0.description }) ?? true, state.seq > core.state?.seq ?? 0 else { return [] }
        if state.seq > plausibleSeq(context) {
            return [.refusedShared(SharedInput.Refusal(reason: .implausible, detail: "seq \(state.seq) cannot follow the room's; fetching the room again")), .resync]
        }
        guard core.adopt(state: state) else { return [] }
        if proposed?.by != state.by { proposed = nil }
        return [.broadcast(.state(state))]
    }

    /// A newer state by another than the room's driver, passed on by a node that holds it: while
    /// the driver has not moved here under its lease (`driverMoved`: this node holds no state of
    /// its, or only one it held when the driver was named, from an earlier turn of the same
    /// presenter or from the hash: seeds 201536, 202764, 205195, 210495 with Redis stops, follow
    /// keys and signing, a presenter who drove before took control again through a stopped Redis,
    /// and the nodes that held its earlier place dropped the newer one), it is the room's last place,
    /// its predecessor's newest, which this node lacks: it holds none (seed 41: after Redis
    /// restarted empty the hash held only a `seq` base, and a new presenter's claim came before
    /// the answers to its node's `Q`) or an older one (seed 20131 with Redis stops: fetched from
    /// a hash that lagged the moves, the driver's node gone before its write-back, while another
    /// driver held the lease). Every node hears the passed-on states in the channel's order and
    /// keeps the newer, so all end on it; members hear it while they know no driver (told so
    /// first, then the driver again: I5), as after a snapshot. Once the driver moved, its states
    /// leap above every earlier driver's: another driver's is dropped.
    /// On the lease holder's node, a passed-on state newer than any it holds or ordered is
    /// ordered again under its driver instead (a leap above it, as a new lease's first state; as
    /// `leadAgain`, not while a merge is on its way), so that every node ends on one place under
    /// the driver it knows: the predecessor's newest place while the driver has not moved under
    /// its lease, which this node missed (seed 20123: paused through the previous driver's last
    /// moves) or another node may lack (seed 30632: taken here as the last place while a node that
    /// held that driver's older place dropped it); the driver's own place once it has (seeds
    /// 41381, 41537: a node apart from Redis numbered a state alone from a clock that ran later,
    /// its merge wrote it into the hash, and the driver's node answered `Q` below it).
    mutating func takeLastPlace(_ state: ScrollState, _ context: Context) -> [Effect] {
        guard state.seq <= plausibleSeq(context), state.seq > core.state?.seq ?? 0, let driver = core.driver else { return [] }
        if !merging, driverLeadsHere, state.seq > orderedHere?.seq ?? 0 {
            var place = orderedHere ?? state
            place.by = driver.description
            place.seq = leap(above: max(core.lastSeq, state.seq), context)
            leapsNextLead = false
            orderedHere = place
            return [.publishLed(place)]
        }
        guard !driverMoved, core.adopt(state: state) else { return [] }
        return [.broadcast(.driver(nil, name: nil)), .broadcast(.state(state)), .broadcast(.driver(driver, name: core.driverName))]
    }

    /// A change the engine ordered. Versions come one by one: a gap means changes were missed,
    /// or the version cannot be right (anyone who can publish on the channel can write one);
    /// so can a `seq` far above the room's. Either way the room is fetched again instead.
    /// A version already held that says something else (a publisher sent another change under
    /// it first; the real one would be dropped unseen) makes the room be fetched again too.
    mutating func take(_ change: SharedChange, version: Int, _ context: Context) -> [Effect] {
        let cannotFollow = SharedInput.Refusal(reason: .implausible,
                                               detail: "version \(version) or its seq cannot follow the room's; fetching the room again")
        guard version > self.version else {
            if version <= snapshotVersion || (version == self.version && takenDigest == change.digest) { return [] }
            let held = SharedInput.Refusal(reason: .implausible,
                                           detail: "version \(version) is already held with other content; fetching the room again")
            missedChanges = true
            return [.refusedShared(held), .resync]
        }
        var leapsFar = false
        if case .state(let state) = change { leapsFar = state.seq > plausibleSeq(context) }
        guard version == self.version + 1, !leapsFar else {
            missedChanges = true
            return [.refusedShared(cannotFollow), .resync]
        }
        self.version = version
        takenDigest = change.digest
        switch change {
        case .state(let state):
            guard core.adopt(state: state) else { return [] }
            if proposed?.by != state.by { proposed = nil }
            return [.broadcast(.state(state))]
        case .driver(let driver, let name):
            let ended = moveLease(to: driver)
            let inherited = driver != nil && driver == inheriting
            let lapsed = driver == nil && lapsing != nil && lapsing == core.driver
            (inheriting, lapsing) = (nil, nil)
            guard driver != core.driver else { return ended }
            core.adopt(driver: driver, name: name)
            driverNamedAbove = core.state?.seq ?? 0
            // A lease inherited from a driver whose node died: nodes may hold different places
            // of earlier drivers (the dead node answered no `Q`), and the heir has not moved; its
            // node orders its place again under it, so every node ends on one (seed 30671).
            // With nobody to inherit it, the lease lapses: nothing is ordered again, so the node
            // that asked for the lapse passes its place on and asks every node for theirs; with
            // nobody driving, each takes whatever is newer than its own (`takeLed`), and all end
            // on the newest (docs/cluster.md §7.14).
            let broadcast: [Effect] = [.broadcast(.driver(driver, name: name))]
            if lapsed { return ended + broadcast + (core.state.map { [.passOn($0, keep: false)] } ?? []) + [.askNewest] }
            return ended + broadcast + (inherited ? leadAgain(context) : [])
        case .document(let document):
            // Held to this node's budget for documents, as a member's document is.
            let growth = ByteBudget.growth(replacing: core.document, with: document.text)
            if let refusal = context.documents.refusal(forGrowth: growth) {
                return [.refusedShared(SharedInput.Refusal(reason: .invalid, detail: "a document: \(refusal.message)"))]
            }
            core.adopt(document: document)
            return [.countDocumentBytes(growth), .broadcast(.document(document))]
        case .access(let record):
            guard record != core.followKey else { return [] }
            core.adopt(followKey: record)
            return record != nil ? [.evictFollowers] : []
        case .presenterKey(let record):
            return adoptSharedKey(record)
        }
    }

    /// The lease as the engine says it now. When it moves off a driver who was this node's
    /// member, the led state this node has not written back yet is dropped (`.leadEnded`): a
    /// state of a driver who lost the lease never goes into the hash (divergence 2).
    mutating func moveLease(to driver: SessionID?) -> [Effect] {
        let previous = leaseHolder
        leaseHolder = driver
        guard let previous, previous != driver, core.members[previous] != nil else { return [] }
        return [.leadEnded]
    }

    /// Takes what the engine holds: the newer state, another document (to this node's budget),
    /// the driver, the keys; members hear what changed.
    mutating func adopt(_ snapshot: RoomSnapshot, _ context: Context) -> [Effect] {
        // The engine's count, even if lower: a Redis that restarted empty counts from 0 again.
        version = snapshot.version
        snapshotVersion = snapshot.version
        missedChanges = false
        takenDigest = nil
        var effects = [Effect]()  // (a room driven elsewhere is claimed after the step: `afterStep`)
        // The keys first (a room made private elsewhere evicts its followers before they hear
        // more), then driver, document and state: a member hears who drives before that
        // driver's state (docs/cluster.md I5).
        if let key = snapshot.keyDigest { effects += adoptSharedKey(key) }
        if let record = snapshot.followKey, record != core.followKey {
            core.adopt(followKey: record)
            effects.append(.evictFollowers)
        }
        let driver = snapshot.driver.flatMap(SessionID.init)
        effects += moveLease(to: driver)
        leapsNextLead = true
        core.continueAbove(snapshot.seq)
        // A state by another driver (the hash's, written before the new driver moved) goes
        // before the change, while members know its own driver or none: one they know as
        // driver is first told nobody drives (docs/cluster.md I5).
        if let state = snapshot.state, driver != nil, state.by != driver?.description, state.seq > core.state?.seq ?? 0 {
            if let known = core.driver, known.description != state.by {
                core.adopt(driver: nil)
                effects.append(.broadcast(.driver(nil, name: nil)))
            }
            core.adopt(state: state)
            effects.append(.broadcast(.state(state)))
        }
        if driver != core.driver || (driver != nil && snapshot.driverName != core.driverName) {
            core.adopt(driver: driver, name: snapshot.driverName)
            effects.append(.broadcast(.driver(driver, name: snapshot.driverName)))
        }
        if let document = snapshot.document, document.fingerprint != core.document?.fingerprint {
            let growth = ByteBudget.growth(replacing: core.document, with: document.text)
            if let refusal = context.documents.refusal(forGrowth: growth) {
                effects.append(.refusedShared(SharedInput.Refusal(reason: .invalid, detail: "a document: \(refusal.message)")))
            } else {
                core.adopt(document: document)
                effects.append(.countDocumentBytes(growth))
                effects.append(.broadcast(.document(document)))
            }
        }
        if let state = snapshot.state, core.adopt(state: state) { effects.append(.broadcast(.state(state))) }
        driverNamedAbove = core.state?.seq ?? 0
        return effects
    }

    /// A tick: this node's driver keeps its lease; a driver that is no member here and whose
    /// node died (its lease expired) gives control to a presenter here (the engine decides).
    mutating func keepLease() -> [Effect] {
        guard let driver = core.driver else { return [] }
        if core.members[driver] != nil { return [.renewLease(driver)] }
        guard let id = core.members.firstID(where: { $0.role == .presenter }) else { return [] }
        inheriting = id
        return [.inheritLease(id, name: core.names[id], stale: driver)]
    }

    /// The heartbeat of a shared room: a driver that is no member here, with no presenter here
    /// to inherit its lease: if that lease lapsed (its node died), the engine tells every node
    /// nobody drives (docs/cluster.md, divergence 6).
    mutating func checkLapse() -> [Effect] {
        guard let driver = core.driver, core.members[driver] == nil,
              core.members.firstID(where: { $0.role == .presenter }) == nil else { return [] }
        return [.lapseLease(stale: driver)]
    }

    /// Another node asked for the room's newest state (`Event.stateWanted`).
    mutating func stateWanted(now: UInt64, _ context: Context) -> [Effect] {
        guard let state = core.state else { return [] }
        let interval = SharedTiming.writeBackNanoseconds
        func elapsed(since start: UInt64) -> UInt64 { now > start ? now - start : 0 }
        guard driverLeadsHere else {
            // Another node's driver, or none: passed on at most once per interval, however
            // often asked (issue 46.7: every node answering every `Q` made answers grow with
            // the questions); still answered when the lease holder's node died and cannot.
            // A question within the interval is answered at its end (seed 31067: a node that
            // fetched the room 22 ms after another's question heard no answer, and no state).
            if let last = passedOnAt, elapsed(since: last) < interval {
                guard !orderAgainScheduled else { return [] }
                orderAgainScheduled = true
                return [.scheduleOrderAgain(after: interval - elapsed(since: last))]
            }
            passedOnAt = now
            return [.passOn(state, keep: false)]
        }
        // The lease holder's node: the first question of an interval orders the driver's place
        // again; the next passes the state on at once (a node that fetched the room after that
        // ordering was published, from a hash that may lag it, gets the newest within its
        // welcome's wait) and orders once more at the interval's end; later ones wait for that
        // ordering. At most two answers per interval, whatever the number of questions (a
        // `PUBLISH` of `Q` is all anyone on that Redis needs to ask: one `S` per `Q` before).
        guard let last = orderedAgainAt, elapsed(since: last) < interval else {
            orderAgainScheduled = false
            orderedAgainAt = now
            return leadAgain(context)
        }
        guard !orderAgainScheduled else { return [] }
        orderAgainScheduled = true
        return [.passOn(state, keep: true), .scheduleOrderAgain(after: interval - elapsed(since: last))]
    }
}
