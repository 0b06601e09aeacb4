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
    package internal(set) var held: (message: ClientMessage, from: SessionID, sender: Sender)?
    package internal(set) var releasing = false
    /// The version of the last change taken from the engine.
    package var version = 0
    /// A change could not follow the room's (a gap, a version held with other content): the
    /// room is being fetched again, and until its snapshot no led state is taken.
    package internal(set) var missedChanges = false
    /// The last snapshot's version (changes up to it are in it), and what the change at
    /// `version` said (`SharedChange.digest`; nil when a snapshot set it).
    var snapshotVersion = 0
    var takenDigest: Int?
    /// The last state this node proposed to the engine (the base for the next one's direction).
    package var proposed: ScrollState?
    /// The driver as the engine last said (a change or a snapshot). A member of this node who
    /// is both the room's driver and this one holds the lease: its scrolls are led here. (A
    /// driver taken here alone while the engine was away leads only once the engine agrees.)
    package internal(set) var leaseHolder: SessionID? {
        didSet { if leaseHolder != oldValue { orderedHere = nil } }  // ordered under another lease
    }
    /// Whether the next led state leaps (`handoverLeap`) because the room was fetched again:
    /// while this node was apart, another node's reconcile may have published the room's
    /// state above this node's `seq`, and a led state at the same `seq` would be dropped there.
    var leapsNextLead = false
    /// The last state this node ordered from its driver's scroll (led, or applied here while
    /// apart) under the current lease: the driver's own place (`core.state` may since hold an
    /// older one that another node's merge published above it).
    var orderedHere: ScrollState?
    /// The `seq` of the state this node held when it last learned who drives (a change, or a
    /// snapshot and its state): a state of that driver at or below it was ordered before its
    /// lease as this node knows it (an earlier turn of the same presenter, or the hash's,
    /// which may be either), so the driver has not moved here under it (`driverMoved`).
    var driverNamedAbove = 0
    /// What the room did here alone is on its way to the engine to be merged (after an
    /// outage): until the answer says who holds the lease, the driver's newest scroll waits
    /// here (sent to the engine now, it could reach it before the merge and be refused).
    package internal(set) var merging = false
    package internal(set) var heldForMerge: (update: ScrollUpdate, from: SessionID, sender: Sender)?
    /// The follow key of a presenter whose join bound the room's key on this node: set only
    /// once the engine answers that this key is the room's (`keyBound`: another node may
    /// have bound another first, unknown here).
    package internal(set) var followKeyAfterBinding: NewFollowKey?
    /// When this node last ordered its driver's state again for a node that asked, and
    /// whether one more such ordering waits for the interval's end (`stateWanted`).
    package internal(set) var orderedAgainAt: UInt64?
    package internal(set) var orderAgainScheduled = false
    /// When this node, not leading the room, last passed its state on to a node that asked.
    package internal(set) var passedOnAt: UInt64?
    /// Takes and claims of this node's presenters on their way to the engine, until their
    /// outcome is known here (`ControlWait`), and the ticket the next one gets.
    package internal(set) var controlWaits: [ControlWait] = []
    var nextControlTicket = 0
    /// Presenters whose claim this node sent and whose outcome it never learned (no answer in
    /// time, the engine away, a merge first): the lease may be theirs. When they leave, or their
    /// join ends without them, it goes back (`giveBackClaim`).
    package internal(set) var unsettledClaims: [SessionID] = []
    /// The address that created the room while no presenter has claimed it (a follower asked
    /// for a name nobody presents in): its address holds it unclaimed (`RoomCreation`).
    package internal(set) var creator: String?
    /// The presenter here whose `inherit` went to the engine last (`keepLease`): when the lease
    /// passes to it, this node orders the room's place again under it (`take`).
    var inheriting: SessionID?
    /// The driver whose lapsed lease this node's `lapse` ended (`Event.lapsed`, answered before
    /// the room hears the change): when it hears nobody drives, nodes may hold different places
    /// of earlier drivers, so this node passes its own on and asks for the newest (`take`).
    var lapsing: SessionID?
    /// Sessions that went while the engine could not take their release (`releaseUnsent`): a
    /// take or claim of theirs may still run in Redis (sent into a stopped Redis), or the lease
    /// may be theirs from before the outage; after the merge their release goes (it does
    /// nothing if the lease is another's). Before, such a lease stayed until it expired, and a
    /// node that still named its own former driver renewed it (seeds 201536, 202764).
    package internal(set) var owedReleases: [SessionID] = []
    /// How many owed releases a room keeps at most.
    package static var owedReleasesKept: Int { 16 }

    /// The newest state this node holds or ordered: its driver's led states may not have come
    /// back on the channel yet (Redis stopped with them queued), and a merge must number above
    /// them (seed 41291: a merge published the driver's older place under the `seq` of its
    /// first state queued in the stopped Redis).
    package var newestState: ScrollState? {
        guard let ordered = orderedHere, ordered.seq > core.state?.seq ?? 0 else { return core.state }
        return ordered
    }

    /// Whether this node heard the room's driver move under the lease it knows: it holds a
    /// state of that driver newer than the one it held when the driver was named.
    var driverMoved: Bool {
        guard let driver = core.driver, let state = core.state else { return false }
        return state.by == driver.description && state.seq > driverNamedAbove
    }

    /// Whether `id`'s scrolls are ordered on this node (`lead`).
    package func leads(_ id: SessionID) -> Bool { core.driver == id && leaseHolder == id }

    /// Whether the room's driver is this node's member and its lease is held here (every node
    /// knows the lease holder: only the driver's own node orders its states).
    package var driverLeadsHere: Bool { core.driver.map { leads($0) && core.members[$0] != nil } ?? false }

    /// Whether `id`'s scrolls wait for a merge's answer (`lead` holds them): it drives here.
    package func waitsForMerge(_ id: SessionID) -> Bool { merging && core.driver == id }

    /// Whether `id`'s scrolls go to `lead`: it leads here, or waits for a merge.
    package func takesLead(_ id: SessionID) -> Bool { leads(id) || waitsForMerge(id) }

    package init(core: RoomCore, seq: SeqReservation = .unbounded, unclaimedBy creator: String? = nil) {
        self.core = core
        self.seq = seq
        self.creator = creator
    }

    /// How far a new driver's first state leaps over the room's `seq` at least (`leap(above:)`),
    /// so that states the previous holder's node sent before it heard of the change (which
    /// Redis may still have written to the room's hash) stay below the new driver's. Well under
    /// `SeqReservation.block`, the most a state may leap before a node fetches the room again
    /// (but for a leap to the `seq` clock).
    package static var handoverLeap: Int { SharedTiming.handoverLeap }

    /// Takes `event`: the room's next state, and the effects for the hub to carry out.
    @_specialize(exported: true, where Sender == MemberReference)  // the hub's (see MemberReference)
    package mutating func step(_ event: __owned Event, _ context: Context) -> [Effect] {
        var effects = react(to: event, context)
        afterStep(&effects)
        return effects
    }

    /// Takes a join: `step(.join(request), context)`, the rules and `afterStep` the same, without
    /// the event: the specialized step's switch copies its event whole and destroys it twice,
    /// through the event's value witnesses (`switch consume event` would not copy, but crashes
    /// Swift 6.3.1), some 230 instructions of every join (docs/benchmarks-log.md, "the join at
    /// join-45"). The hub joins through here; `.join` stays the same step for everyone else.
    @_specialize(exported: true, where Sender == MemberReference)
    package mutating func step(join request: JoinRequest, _ context: Context) -> [Effect] {
        var effects = join(request, context)
        afterStep(&effects)
        return effects
    }

    /// What `event` does, before the rules every step ends with (`afterStep`).
    @inline(__always)
    private mutating func react(to event: __owned Event, _ context: Context) -> [Effect] {
        switch event {
        case .join(let request):
            return join(request, context)
        case .leave(let id):
            return leave(id, context)
        case .message(let message, let id, let sender):
            return context.shared ? share(message, from: id, sender: sender, context) : receive(message, from: id, sender: sender, context)
        case .unshared(let message, let id, let sender):
            return receive(message, from: id, sender: sender, context)
        case .shared(let version, let change):
            return take(change, version: version, context)
        case .lead(let update, let id, let sender):
            return lead(update, from: id, sender: sender, context)
        case .led(let state):
            return takeLed(state, context)
        case .leadAgain:
            return leadAgain(context)
        case .snapshot(let snapshot):
            return adopt(snapshot, context)
        case .merging:
            merging = true
            return []
        case .merged(let snapshot):
            let before = newestState
            var effects = snapshot.map { adopt($0, context) } ?? []
            merging = false
            if let held = heldForMerge {
                heldForMerge = nil
                // A member who left takes its scroll with it.
                if core.members[held.from] != nil { effects.append(.resend(.scroll(held.update), from: held.sender)) }
            }
            finishControlWaits(&effects)  // the room knows who leads now, whatever version Redis counts
            if snapshot != nil {  // (on the same link after the merge: Redis runs them after it)
                effects += owedReleases.map(Effect.releaseControl)
                owedReleases = []
            }
            // (A take sent during the merge goes on waiting: its answer follows the merge's.)
            // A place as new as the room's is passed on: the nodes that merged before this one
            // asked while it could not answer (seed 31435: it was paused), and a merge without
            // the lease writes it only as the hash's base, unpublished, so the snapshot's state
            // may be this node's own (seeds 41082, 41381, 41537: every other node kept an older
            // place, or the driver's node never heard the `seq` to order above). An older place
            // is not sent; the room's own, already heard everywhere, costs one dropped `S`.
            if let snapshot, let before, before.seq >= snapshot.state?.seq ?? 0, let mine = core.state {
                effects.append(.passOn(mine, keep: false))
            }
            return effects
        case .controlAnswered(let ticket, let result):
            return controlAnswered(ticket, result, context)
        case .controlOverdue(let ticket):
            var effects: [Effect] = []
            if let index = controlWaits.firstIndex(where: { $0.ticket == ticket }) {
                let wait = controlWaits.remove(at: index)
                finish(wait, settled: false, &effects)
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
        case .keyBound(let kept, let digest):
            return keyBound(kept: kept, digest: digest, context)
        case .keyUpgraded(let legacy, let record):
            guard core.presenterKeyText == legacy else { return [] }
            core.adopt(presenterKey: record)
            return [.save]
        case .keepLease:
            return keepLease()
        case .checkLapse:
            return checkLapse()
        case .lapsed(let stale):
            lapsing = stale
            return []
        case .releaseUnsent(let id):
            if !owedReleases.contains(id) { owedReleases.append(id) }
            // The newest few (a long outage's hand-overs): an older one's lease has long expired.
            if owedReleases.count > Self.owedReleasesKept { owedReleases.removeFirst() }
            return []
        case .stateWanted(let now):
            return stateWanted(now: now, context)
        case .orderAgain(let now):
            orderAgainScheduled = false
            guard !driverLeadsHere else {
                orderedAgainAt = now
                return leadAgain(context)
            }
            guard let state = core.state else { return [] }
            passedOnAt = now
            return [.passOn(state, keep: false)]
        case .forgotten:
            defer { creator = nil }
            return creator.map { [.settleCreation($0)] } ?? []
        case .changesMissed:
            // The driver known here may be stale: until the snapshot no led state is taken (seed
            // 31637: a node awake from a pause, whose driver change failed its confirmation,
            // ordered a later driver's state again under its own former driver).
            missedChanges = true
            return [.resync]
        }
    }
}
extension RoomMachine: Sendable where Sender: Sendable {}
