import ScrollModel

/// A member's joins and messages: the room's rules (`RoomCore`), a scroll held for the store.
extension RoomMachine {
    mutating func join(_ request: JoinRequest, _ context: Context) -> [Effect] {
        let current = core.presenterKeyText
        let hadKey = core.hasPresenterKey
        let locked = core.isLocked
        // A presenter's key counts as the record it makes against the room's current record
        // (not asked of a presenter a signed token admitted; a locked room refuses presenters).
        var record: String?
        if request.role == .presenter, !request.authorized, !locked, request.key != .absent {
            // (After its claim, the record this join bound before it is the room's: proven.)
            guard case .hashed(let made, let against) = request.key,
                  against == current || (request.afterClaim && against == nil && made == current) else { return [.hashKey(against: current)] }
            record = made
        }
        if context.shared, let claim = claimBeforeJoin(request, record: record) { return claim }
        var effects: [Effect] = []
        effects.reserveCapacity(6)  // one array for every join: the room's broadcasts go in as it makes them
        let joined = core.join(request.id, role: request.role, name: request.name, key: record, keyRequired: request.keyRequired,
                               claimsControl: !context.shared, followKey: request.followKey, authorized: request.authorized,
                               setsFollowKey: request.newFollowKey != nil) {
            effects.append(.broadcast($0))
        }
        switch joined {
        case .failure(let error):
            // A wrong key where there is one to match (not a locked room's, not a missing one).
            let wrongKey = error.code == .unauthorized
                && (request.role == .presenter ? hadKey && !locked : request.followKey != nil)
            // Its claim won (or may have), but its key lost the binding race to another
            // node's: the lease goes back now, not when it expires (a driver in no room for 5 s).
            let claimed = giveBackClaim(of: request.id)  // (forgotten either way; alone: `releaseUnsent`)
            return [.joinRefused(error, keyFailed: wrongKey)] + (claimed ? [.releaseControl(request.id)] : [])
        case .success(let welcome):
            // The welcome first, then what the room did for the join, then its broadcasts.
            var front = 0
            func put(_ effect: Effect) {
                if front == effects.count { effects.append(effect) } else { effects.insert(effect, at: front) }
                front += 1
            }
            put(.welcome(welcome))
            if request.role == .presenter, let creator {
                self.creator = nil  // claimed: no longer held against the follower's address
                put(.settleCreation(creator))
            }
            // A proven key replaces an older server's record of it.
            if record != nil, let current, KeyRecord.isLegacyPresenterKey(current) { put(.upgradeKey(from: current)) }
            if request.recordsEveryRoom || (request.role == .presenter && request.asksToRecord) { put(.record(paidBy: request.address)) }
            if !hadKey, core.hasPresenterKey {
                put(.save)
                if context.shared, let digest = core.presenterKeyText { put(.bindKey(digest)) }
            }
            if context.shared, request.role == .presenter, core.driver == nil { put(.claimControl(request.id)) }
            let followKey = request.role == .presenter ? request.newFollowKey : nil
            if effects[..<front].contains(where: { if case .bindKey = $0 { true } else { false } }) {
                // A key bound here may lose to one another node bound first: the follow key
                // given with it (if any) waits for the engine's word on this binding (`keyBound`).
                followKeyAfterBinding = followKey
            } else if let followKey {
                for effect in setFollowKey(followKey, shared: context.shared) { put(effect) }
            }
            if request.afterClaim, core.driver == request.id {
                // Its claim won: it hears the `driver` message after its welcome, as the first
                // presenter on one node does (members here hear the same driver again).
                effects.insert(.broadcast(.driver(request.id, name: core.driverName)), at: front)
            }
            return effects
        }
    }

    /// A member left: its control goes (through the engine, when shared), and a room nobody
    /// claimed goes with its last member. Also a presenter whose join waited for its claim and
    /// ends without it (it left, or its key check was refused): a lease it won goes back.
    mutating func leave(_ id: SessionID, _ context: Context) -> [Effect] {
        let drove = giveBackClaim(of: id)
        var effects = core.leave(id).map(Effect.broadcast)
        // Members here hear at once that nobody drives (the room here no longer has a
        // driver: the release, when it comes back, changes nothing here and would not be
        // heard); the engine's release tells every other node. Also while the room is served
        // alone: the engine cannot take it then, and it goes after the merge (`releaseUnsent`).
        if drove { effects.append(.releaseControl(id)) }
        if creator != nil, core.isEmpty { effects.append(.forgetUnclaimed) }
        return effects
    }

    /// A member's message: applied now, or (a scroll the store has no ceiling for yet) held.
    mutating func receive(_ message: ClientMessage, from id: SessionID, sender: Sender, _ context: Context) -> [Effect] {
        if case .scroll = message {
            leapForNewDriverAlone(id, context)
            // Above the led states this node ordered too: one that had not come back on the
            // channel when Redis went away holds its `seq` on the nodes that heard it (seeds
            // 43286, 43435 with Redis stops). (One node alone: `orderedHere` is its state.)
            if let ordered = orderedHere { core.continueAbove(ordered.seq) }
        }
        guard case .scroll(let update) = message, held != nil || (seq.mustWait(after: core.lastSeq) && !context.storeFailing) else {
            return apply(message, from: id, sender: sender, context)
        }
        // So that `seq` never goes back after a crash, the scroll waits for the store to
        // write a ceiling above it. A newer one replaces it, also while its release is on its
        // way (the release applies the newest).
        if case .failure(let error) = core.proposeScroll(update, from: id) { return [.refuse(error, to: sender)] }
        let waiting = held != nil
        held = (message, id, sender)
        return waiting ? [] : [.save]
    }

    mutating func apply(_ message: ClientMessage, from id: SessionID, sender: Sender, _ context: Context) -> [Effect] {
        var growth = 0
        if case .document(_, _, let text) = message {
            growth = ByteBudget.growth(replacing: core.document, with: text)
            if let refusal = context.documents.refusal(forGrowth: growth) { return [.refuse(refusal, to: sender)] }
        }
        let drove = core.driver == id
        switch core.receive(message, from: id) {
        case .failure(let error):
            return [.refuse(error, to: sender)]
        case .success(let broadcasts):
            if case .scroll = message { orderedHere = core.state }
            var effects = broadcasts.map(Effect.broadcast)
            if case .document = message { effects.insert(.countDocumentBytes(growth), at: 0) }
            // The driver's `release` applied alone in a shared room (an engine: `seqNow`): the
            // engine cannot take it now; it goes after the merge (`releaseUnsent`), or the lease,
            // still hers, names her again everywhere (seed 41082 with Redis stops).
            if case .control(false) = message, drove, core.driver == nil, context.seqNow > 0 { effects.append(.releaseControl(id)) }
            return broadcasts.contains(where: \.isStoredChange) ? [.save] + effects : effects
        }
    }

    /// A new driver's first state on a node that serves a shared room alone (Redis away, or a
    /// take the engine could not confirm) numbers from the `seq` clock too, as under a new lease
    /// (`leap(above:)`): nodes apart number their drivers' states apart (seed 20006 with Redis
    /// stops: a take sent while Redis was stopped, applied alone when the node gave up waiting,
    /// numbered its driver's state one above the room's, as the lease holder's node did its
    /// own meanwhile), and a room created alone does not count from 1 (seed 20233). Only with an
    /// engine (`seqNow` above 0): one node alone numbers as it always did.
    mutating func leapForNewDriverAlone(_ id: SessionID, _ context: Context) {
        guard context.seqNow > 0, core.driver == id, core.state?.by != id.description else { return }
        core.continueAbove(leap(above: core.lastSeq, context) - 1)
    }

    /// The held scroll may go: its release is sent to its sender's loop, once.
    mutating func release() -> [Effect] {
        guard let held, !releasing else { return [] }
        releasing = true
        return [.releaseHeld(on: held.sender)]
    }

    /// A member's message in a shared room: checked here by the room's rules, then sent to the
    /// engine, which orders it for every node (its proposed state's direction from the last
    /// one this node proposed); the lease holder's driver's scroll is ordered here (`lead`); a
    /// follower's `follow` stays on this node.
    mutating func share(_ message: ClientMessage, from id: SessionID, sender: Sender, _ context: Context) -> [Effect] {
        func toEngine(_ request: SharedRequest) -> [Effect] { [.share(request, message: message, from: id, sender: sender)] }
        // A scroll right after `take` waits for the take's outcome, as on one node.
        if !controlWaits.isEmpty, case .scroll(let update) = message, holdForTake(update, from: id, sender: sender) { return [] }
        switch message {
        case .scroll(let update) where takesLead(id):
            // The driver is this node's member, so this node holds the lease: it orders the
            // state, its members hear it at once, and the engine publishes it as it is. (While
            // the room is merged after an outage, `lead` holds it until the merge says who leads.)
            return lead(update, from: id, sender: sender, context)
        case .scroll(let update):
            let sentBefore = proposed.flatMap { SessionID($0.by) } == id
            switch core.proposeScroll(update, from: id, after: .some(sentBefore ? proposed : core.state)) {
            case .failure(let error): return [.refuse(error, to: sender)]
            case .success(var state):
                // The `scroll` script numbers it above the room's hash and this `seq` (a floor).
                // Sent by a driver whose node has not heard that it holds the lease: the first as
                // a new lease's first state (the hash may lag states the previous holder's node
                // ordered, and this node may not have heard them), the next above it.
                state.seq = sentBefore ? max(state.seq, core.lastSeq + 1) : leap(above: core.lastSeq, context)
                proposed = state
                return toEngine(.scroll(state))
            }
        case .follow:
            return receive(message, from: id, sender: sender, context)
        case .control, .document:
            break
        }
        switch core.check(message, from: id) {
        case .failure(let error): return [.refuse(error, to: sender)]
        case .success(false):
            // The driver shown here takes control: nothing to do, unless a merge is on its way
            // (it drove here alone): then the take goes to the engine, as the merge may name
            // another node's driver.
            guard case .control(true) = message, merging else { return [] }
        case .success(true): break
        }
        switch message {
        case .control(let take):
            guard take else { return toEngine(.control(.release(session: id.description))) }
            return orderControl(.take(session: id.description, name: core.names[id]), for: id, sender: sender)
        case .document(let documentName, let format, let text):
            if let refusal = context.documents.refusal(forGrowth: ByteBudget.growth(replacing: core.document, with: text)) {
                return [.refuse(refusal, to: sender)]
            }
            return toEngine(.document(SharedDocument(name: documentName, format: format, text: text, by: id.description)))
        case .scroll, .follow:
            return []  // above
        }
    }
}
