import ScrollModel

/// One room's rules and state as a sans-I/O state machine: each event (a member's message,
/// a change another node published, the store's progress) gives the room's next state and the
/// effects the hub carries out: tell the members, keep the room, answer a member, fetch the
/// room again. A member's change and another node's go through the same rules (`RoomCore`)
/// and the same document budget. `Sender` is whatever the hub names a member by (tests use
/// plain values).
package struct RoomMachine<Sender> {
    package var core: RoomCore
    /// `seq` the store has written before the room uses it.
    package var seq: SeqReservation
    /// A scroll waiting for the store to write a ceiling above its `seq` (a newer one
    /// replaces it), and whether its release is on its way to its sender's loop.
    package private(set) var held: (message: ClientMessage, from: SessionID, sender: Sender)?
    package private(set) var releasing = false
    /// The version of the last change taken from the engine.
    package var version = 0
    /// The last snapshot's version (changes up to it are in it), and what the change at
    /// `version` said (`SharedChange.digest`; nil when a snapshot set it).
    private var snapshotVersion = 0
    private var takenDigest: Int?
    /// The last state this node proposed to the engine (the base for the next one's direction).
    package var proposed: ScrollState?
    /// The driver as the engine last said (a change or a snapshot). A member of this node who
    /// is both the room's driver and this one holds the lease: its scrolls are led here. (A
    /// driver taken here alone while the engine was away leads only once the engine agrees.)
    package private(set) var leaseHolder: SessionID? {
        didSet { if leaseHolder != oldValue { orderedHere = nil } }  // ordered under another lease
    }
    /// Whether the next led state leaps (`handoverLeap`) because the room was fetched again:
    /// while this node was apart, another node's reconcile may have published the room's
    /// state above this node's `seq`, and a led state at the same `seq` would be dropped there.
    private var leapsNextLead = false
    /// The last state this node ordered from its driver's scroll (led, or applied here while
    /// apart) under the current lease: the driver's own place (`core.state` may since hold an
    /// older one that another node's merge published above it).
    private var orderedHere: ScrollState?
    /// What the room did here alone is on its way to the engine to be merged (after an
    /// outage): until the answer says who holds the lease, the driver's newest scroll waits
    /// here (sent to the engine now, it could reach it before the merge and be refused).
    package private(set) var merging = false
    package private(set) var heldForMerge: (update: ScrollUpdate, from: SessionID, sender: Sender)?

    /// Whether `id`'s scrolls are ordered on this node (`lead`).
    package func leads(_ id: SessionID) -> Bool { core.driver == id && leaseHolder == id }

    /// Whether the room's driver is this node's member and its lease is held here (every node
    /// knows the lease holder: only the driver's own node orders its states).
    package var driverLeadsHere: Bool { core.driver.map { leads($0) && core.members[$0] != nil } ?? false }

    /// Whether `id`'s scrolls wait for a merge's answer (`lead` holds them): it drives here.
    package func waitsForMerge(_ id: SessionID) -> Bool { merging && core.driver == id }

    /// Whether `id`'s scrolls go to `lead`: it leads here, or waits for a merge.
    package func takesLead(_ id: SessionID) -> Bool { leads(id) || waitsForMerge(id) }

    package init(core: RoomCore, seq: SeqReservation = .unbounded) {
        self.core = core
        self.seq = seq
    }

    /// A session asking to join, its keys already checked where that is slow (a presenter
    /// key arrives as the record it makes, hashed against the room's).
    package struct JoinRequest: Sendable {
        package var id: SessionID
        package var role: Role
        package var name: String?
        package var key: String?
        /// Whether a follow key was given, and a check of it against the room's record.
        package var followKey: (@Sendable (String) -> Bool)?
        /// An application's signed token admitted the session in its role: no key is asked.
        package var authorized = false
        /// Presenters must give a key (`requirePresenterKey`).
        package var keyRequired = false
        /// A presenter gave a follow key (to make the room private): it must prove itself.
        package var setsFollowKey = false

        package init(id: SessionID, role: Role, name: String? = nil, key: String? = nil, followKey: (@Sendable (String) -> Bool)? = nil,
                     authorized: Bool = false, keyRequired: Bool = false, setsFollowKey: Bool = false) {
            self.id = id
            self.role = role
            self.name = name
            self.key = key
            self.followKey = followKey
            self.authorized = authorized
            self.keyRequired = keyRequired
            self.setsFollowKey = setsFollowKey
        }
    }

    /// An input to the room. The engine's large inputs (a state, a change, a snapshot: up to
    /// 300 bytes) are boxed, so that an event is some 100 bytes: every step copies its event.
    package enum Event {
        case join(JoinRequest)
        case leave(SessionID)
        /// A member's message, applied on this node.
        case message(ClientMessage, from: SessionID, sender: Sender)
        /// A change the engine ordered (from any node, this one included), `version` one above
        /// the last.
        indirect case shared(version: Int, SharedChange)
        /// The driver's scroll on the node that holds the room's lease (the driver is its
        /// member): ordered here, heard here at once and published (`publishLed`); held
        /// while a merge is on its way (`merging`).
        case lead(ScrollUpdate, from: SessionID, sender: Sender)
        /// A state the lease holder's node ordered: taken from the room's driver only, above
        /// the room's `seq`.
        indirect case led(ScrollState)
        /// Another node fetched or merged the room and asks for its newest state: the lease
        /// holder's node orders its state again, above the room's `seq` (a merge publishes the
        /// hash's state above the hash's `seq`, and the hash lags the led states: the two would
        /// show different places under one `seq`).
        case leadAgain
        /// The room as the engine holds it (fetched on attach, again after a gap, after an
        /// outage), validated like every input: its version replaces the room's.
        indirect case snapshot(RoomSnapshot)
        /// What the room did here alone went to the engine to be merged (after an outage).
        case merging
        /// The merge's answer: the room as the engine holds it now (nil: the engine went away
        /// again); a scroll that waited for it is received again (`resend`).
        indirect case merged(RoomSnapshot?)
        /// The store wrote a `seq` ceiling.
        case ceilingWritten(Int)
        /// The held scroll's release reached its sender's loop: it goes now (the newest one).
        case releaseHeld
        /// The store cannot write (disk full): a held scroll does not wait for it.
        case storeFailing
    }

    /// What an event takes from outside the room.
    package struct Context {
        /// Bytes of documents all rooms hold, against their limit.
        package let documents: ByteBudget
        /// Whether the store is failing (a scroll does not wait for it then).
        package var storeFailing = false
        /// Whether the room is shared through the engine now (control changes go through it).
        package var shared = false

        package init(documents: ByteBudget, storeFailing: Bool = false, shared: Bool = false) {
            self.documents = documents
            self.storeFailing = storeFailing
            self.shared = shared
        }
    }

    package enum Effect {
        /// The session joined: its welcome.
        case welcome(RoomCore.Welcome)
        /// The session may not join; `keyFailed`: it gave a wrong key (counted against its address).
        case joinRefused(ProtocolError, keyFailed: Bool)
        /// The room's presenter key record was set by this join: the engine keeps the first.
        case bindKey(String)
        /// A presenter joined a shared room nobody drives: ask the engine for control.
        case claimControl(SessionID)
        /// The driver left a shared room: the engine releases control for every node.
        case releaseControl(SessionID)
        /// Every member hears it (encoded once, in order).
        case broadcast(Broadcast)
        /// The room's record changed: keep it (with a `seq` ceiling).
        case save
        /// Tell `sender` its message was refused.
        case refuse(ProtocolError, to: Sender)
        /// A held scroll may go: run `.releaseHeld` on `sender`'s loop.
        case releaseHeld(on: Sender)
        /// What the engine brought cannot be taken (said in the log and /metrics).
        case refusedShared(SharedInput.Refusal)
        /// A change that cannot follow the room's: fetch the room again from the engine.
        case resync
        /// The room became private: its followers must go (they follow again with the key).
        case evictFollowers
        /// A state this node ordered as the lease holder: to the engine, in order.
        indirect case publishLed(ScrollState)
        /// A scroll that waited for a merge: received again on its sender's loop, now that
        /// the room knows who leads.
        indirect case resend(ClientMessage, from: Sender)
    }

    /// How far a new driver's first state leaps over the room's `seq`, so that states the
    /// previous holder's node sent before it heard of the change (which Redis may still
    /// have written to the room's hash) stay below the new driver's. Well under
    /// `SeqReservation.block`, the most a state may leap before a node fetches the room again.
    package static var handoverLeap: Int { 1024 }

    package mutating func step(_ event: Event, _ context: Context) -> [Effect] {
        switch event {
        case .join(let request):
            return join(request, context)
        case .leave(let id):
            let drove = core.driver == id
            let broadcasts = core.leave(id).map(Effect.broadcast)
            // Members here hear at once that nobody drives (the room here no longer has a
            // driver: the release, when it comes back, changes nothing here and would not be
            // heard); the engine's release tells every other node.
            return drove && context.shared ? broadcasts + [.releaseControl(id)] : broadcasts
        case .message(let message, let id, let sender):
            return receive(message, from: id, sender: sender, context)
        case .shared(let version, let change):
            return take(change, version: version, context)
        case .lead(let update, let id, let sender):
            return lead(update, from: id, sender: sender)
        case .led(let state):
            return takeLed(state)
        case .leadAgain:
            // Ordered under the current lease: `by` is its driver (whose own place, if it moved
            // under this lease, or the room's place passed on to it), above everything this node
            // ordered; heard here when it comes back on the channel, as `lead`'s.
            guard driverLeadsHere, let driver = core.driver, var state = orderedHere ?? core.state else { return [] }
            let own = orderedHere != nil
            state.by = driver.description
            state.seq = max(core.lastSeq, orderedHere?.seq ?? 0) + (leapsNextLead || !own ? Self.handoverLeap : 1)
            leapsNextLead = false
            orderedHere = state
            return [.publishLed(state)]
        case .snapshot(let snapshot):
            return adopt(snapshot, context)
        case .merging:
            merging = true
            return []
        case .merged(let snapshot):
            var effects = snapshot.map { adopt($0, context) } ?? []
            merging = false
            if let held = heldForMerge {
                heldForMerge = nil
                // A member who left takes its scroll with it.
                if core.members[held.from] != nil { effects.append(.resend(.scroll(held.update), from: held.sender)) }
            }
            return effects
        case .ceilingWritten(let ceiling):
            return seq.wrote(ceiling, lastSeq: core.lastSeq) ? release() : []
        case .storeFailing:
            return release()
        case .releaseHeld:
            releasing = false
            guard let (message, id, sender) = held else { return [] }
            held = nil
            // Still in the room? A member who left takes its scroll with it.
            guard core.members[id] != nil else { return [] }
            return apply(message, from: id, sender: sender, context)
        }
    }

    private mutating func join(_ request: JoinRequest, _ context: Context) -> [Effect] {
        let hadKey = core.hasPresenterKey
        let locked = core.isLocked
        var effects: [Effect] = []
        effects.reserveCapacity(6)  // one array for every join: the room's broadcasts go in as it makes them
        let joined = core.join(request.id, role: request.role, name: request.name, key: request.key, keyRequired: request.keyRequired,
                               claimsControl: !context.shared, followKey: request.followKey, authorized: request.authorized,
                               setsFollowKey: request.setsFollowKey) {
            effects.append(.broadcast($0))
        }
        switch joined {
        case .failure(let error):
            // A wrong key where there is one to match (not a locked room's, not a missing one).
            let wrongKey = error.code == .unauthorized
                && (request.role == .presenter ? hadKey && !locked : request.followKey != nil)
            return [.joinRefused(error, keyFailed: wrongKey)]
        case .success(let welcome):
            // The welcome first, then what the room did for the join, then its broadcasts.
            var front = 0
            func put(_ effect: Effect) {
                if front == effects.count { effects.append(effect) } else { effects.insert(effect, at: front) }
                front += 1
            }
            put(.welcome(welcome))
            if !hadKey, core.hasPresenterKey {
                put(.save)
                if context.shared, let digest = core.presenterKeyText { put(.bindKey(digest)) }
            }
            if context.shared, request.role == .presenter, core.driver == nil { put(.claimControl(request.id)) }
            return effects
        }
    }

    /// A member's message: applied now, or (a scroll the store has no ceiling for yet) held.
    private mutating func receive(_ message: ClientMessage, from id: SessionID, sender: Sender, _ context: Context) -> [Effect] {
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

    private mutating func apply(_ message: ClientMessage, from id: SessionID, sender: Sender, _ context: Context) -> [Effect] {
        var growth = 0
        if case .document(_, _, let text) = message {
            growth = ByteBudget.growth(replacing: core.document, with: text)
            if let refusal = context.documents.reserve(growth) { return [.refuse(refusal, to: sender)] }
        }
        switch core.receive(message, from: id) {
        case .failure(let error):
            context.documents.release(growth)
            return [.refuse(error, to: sender)]
        case .success(let broadcasts):
            if case .scroll = message { orderedHere = core.state }
            let effects = broadcasts.map(Effect.broadcast)
            return broadcasts.contains(where: \.isStoredChange) ? [.save] + effects : effects
        }
    }

    /// The held scroll may go: its release is sent to its sender's loop, once.
    private mutating func release() -> [Effect] {
        guard let held, !releasing else { return [] }
        releasing = true
        return [.releaseHeld(on: held.sender)]
    }

    /// The driver's scroll on the lease holder's node: numbered here (one above the newest this
    /// node ordered or adopted; a new lease's first state, or the first after the room was
    /// fetched again, leaps by `handoverLeap`) and published; members here hear it when it comes
    /// back on the room's channel, by the same rule as on every node (`takeLed`): the channel is
    /// the order, so a state ordered after Redis moved the lease is dropped everywhere, here too
    /// (docs/cluster.md, divergence 1).
    private mutating func lead(_ update: ScrollUpdate, from id: SessionID, sender: Sender) -> [Effect] {
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
        let base = max(core.lastSeq, own?.seq ?? 0)
        // Also when this node holds no state yet: another node may have numbered one it did not
        // hear (seen by the simulation: two drivers' states under `seq` 1, seed 76).
        let leaps = leapsNextLead || (own == nil && core.state.map { $0.by != state.by } == true)
        state.seq = base + (leaps ? Self.handoverLeap : 1)
        leapsNextLead = false
        proposed = nil
        orderedHere = state
        return [.publishLed(state)]
    }

    /// A led state: from the driver this node knows (one from a node that lost the lease to
    /// another driver and did not know yet is dropped), or any while nobody drives (the last
    /// driver's newest, passed on by a node that holds it); newer than the room's, and not
    /// leaping implausibly far.
    private mutating func takeLed(_ state: ScrollState) -> [Effect] {
        guard core.driver.map({ state.by == $0.description }) ?? true, state.seq > core.lastSeq else { return [] }
        if state.seq > core.lastSeq + SeqReservation.block {
            return [.refusedShared(SharedInput.Refusal(reason: .implausible, detail: "seq \(state.seq) cannot follow the room's; fetching the room again")), .resync]
        }
        guard core.adopt(state: state) else { return [] }
        if proposed?.by != state.by { proposed = nil }
        return [.broadcast(.state(state))]
    }

    /// A change the engine ordered. Versions come one by one: a gap means changes were missed,
    /// or the version cannot be right (anyone who can publish on the channel can write one);
    /// so can a `seq` far above the room's. Either way the room is fetched again instead.
    /// A version already held that says something else (a publisher sent another change under
    /// it first; the real one would be dropped unseen) makes the room be fetched again too.
    private mutating func take(_ change: SharedChange, version: Int, _ context: Context) -> [Effect] {
        let cannotFollow = SharedInput.Refusal(reason: .implausible,
                                               detail: "version \(version) or its seq cannot follow the room's; fetching the room again")
        guard version > self.version else {
            if version <= snapshotVersion || (version == self.version && takenDigest == change.digest) { return [] }
            let held = SharedInput.Refusal(reason: .implausible,
                                           detail: "version \(version) is already held with other content; fetching the room again")
            return [.refusedShared(held), .resync]
        }
        guard version == self.version + 1 else { return [.refusedShared(cannotFollow), .resync] }
        if case .state(let state) = change, state.seq > core.lastSeq + SeqReservation.block { return [.refusedShared(cannotFollow), .resync] }
        self.version = version
        takenDigest = change.digest
        switch change {
        case .state(let state):
            guard core.adopt(state: state) else { return [] }
            if proposed?.by != state.by { proposed = nil }
            return [.broadcast(.state(state))]
        case .driver(let driver, let name):
            leaseHolder = driver
            guard driver != core.driver else { return [] }
            core.adopt(driver: driver, name: name)
            return [.broadcast(.driver(driver, name: name))]
        case .document(let document):
            // Held to this node's budget for documents, as a member's document is.
            if let refusal = context.documents.reserve(ByteBudget.growth(replacing: core.document, with: document.text)) {
                return [.refusedShared(SharedInput.Refusal(reason: .invalid, detail: "a document: \(refusal.message)"))]
            }
            core.adopt(document: document)
            return [.broadcast(.document(document))]
        case .access(let record):
            guard record != core.followKey else { return [] }
            core.adopt(followKey: record)
            return record != nil ? [.evictFollowers] : []
        }
    }
}

extension RoomMachine {
    /// Takes what the engine holds: the newer state, another document (to this node's budget),
    /// the driver, the keys; members hear what changed.
    private mutating func adopt(_ snapshot: RoomSnapshot, _ context: Context) -> [Effect] {
        // The engine's count, even if lower: a Redis that restarted empty counts from 0 again.
        version = snapshot.version
        snapshotVersion = snapshot.version
        takenDigest = nil
        var effects = [Effect]()
        // Driver, then document, then state: a member hears who drives before that driver's
        // state (docs/cluster.md I5). A state by another driver (the hash's, written before
        // the new driver moved) goes before the change, while its own driver is still the one
        // members know.
        let driver = snapshot.driver.flatMap(SessionID.init)
        leaseHolder = driver
        leapsNextLead = true
        if let state = snapshot.state, driver != nil, state.by != driver?.description, state.by == core.driver?.description,
           core.adopt(state: state) {
            effects.append(.broadcast(.state(state)))
        }
        if driver != core.driver || (driver != nil && snapshot.driverName != core.driverName) {
            core.adopt(driver: driver, name: snapshot.driverName)
            effects.append(.broadcast(.driver(driver, name: snapshot.driverName)))
        }
        if let key = snapshot.keyDigest { core.adopt(presenterKey: key) }
        if let record = snapshot.followKey, record != core.followKey {
            core.adopt(followKey: record)
            effects.append(.evictFollowers)
        }
        if let document = snapshot.document, document.fingerprint != core.document?.fingerprint {
            if let refusal = context.documents.reserve(ByteBudget.growth(replacing: core.document, with: document.text)) {
                effects.append(.refusedShared(SharedInput.Refusal(reason: .invalid, detail: "a document: \(refusal.message)")))
            } else {
                core.adopt(document: document)
                effects.append(.broadcast(.document(document)))
            }
        }
        if let state = snapshot.state, core.adopt(state: state) { effects.append(.broadcast(.state(state))) }
        return effects
    }
}

extension Broadcast {
    /// Changes the store keeps: states and documents.
    package var isStoredChange: Bool {
        switch self {
        case .state, .document: true
        case .presence, .driver: false
        }
    }
}

extension RoomMachine.Effect: Sendable where Sender: Sendable {}
extension RoomMachine.Event: Sendable where Sender: Sendable {}
