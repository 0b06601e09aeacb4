import ScrollModel

/// A session asking to join. Its keys come checked where that is slow: a presenter key
/// as the record it makes (`GivenKey`), so the raw key never leaves the hub. Not nested in the
/// generic machine: the hub makes one per join from another module, where a type nested in a
/// generic one is looked up at run time (its metadata) and copied through it: 400 instructions
/// of a join (docs/benchmarks-log.md, "the join's extra instructions"). A struct the hub makes
/// and lends to `RoomMachine.step(join:)` (no event carries it there: no copy, no allocation);
/// its `init` is `@inlinable`, so the hub builds it in place (made across the module boundary
/// it was built twice and one destroyed, 288 instructions). The event's `.join` boxes it
/// (`indirect`), so that every other event stays small.
package struct JoinRequest: Sendable {
    package let id: SessionID
    package let role: Role
    package let name: String?
    package let key: GivenKey
    /// Whether a follow key was given, and a check of it against the room's record.
    package let followKey: (@Sendable (String) -> Bool)?
    /// An application's signed token admitted the session in its role: no key is asked.
    package let authorized: Bool
    /// Presenters must give a key (`requirePresenterKey`).
    package let keyRequired: Bool
    /// A presenter gave a follow key (to make the room private): it must prove itself.
    package let newFollowKey: NewFollowKey?
    /// The client's address: a recording it starts is counted against it.
    package let address: String
    /// A presenter asked for the room to be recorded (`record=1`).
    package let asksToRecord: Bool
    /// Every room is recorded from its first member (`rooms.record`).
    package let recordsEveryRoom: Bool
    /// A presenter's join that waited for its claim of control (a shared room nobody
    /// drove): it joins now, whatever the claim's outcome (`Effect.continueJoin`).
    package let afterClaim: Bool

    @inlinable
    package init(id: SessionID, role: Role, name: String? = nil, key: GivenKey = nil, followKey: (@Sendable (String) -> Bool)? = nil,
                 authorized: Bool = false, keyRequired: Bool = false, newFollowKey: NewFollowKey? = nil,
                 address: String = "", asksToRecord: Bool = false, recordsEveryRoom: Bool = false, afterClaim: Bool = false) {
        self.id = id
        self.role = role
        self.name = name
        self.key = key
        self.followKey = followKey
        self.authorized = authorized
        self.keyRequired = keyRequired
        self.newFollowKey = newFollowKey
        self.address = address
        self.asksToRecord = asksToRecord
        self.recordsEveryRoom = recordsEveryRoom
        self.afterClaim = afterClaim
    }
}

/// A follow key a presenter gave: the record the room keeps of it (made with a fresh salt),
/// and whether it is the key of a record (the same key again changes nothing).
package struct NewFollowKey: Sendable {
    package var record: String
    package var matches: @Sendable (String) -> Bool

    package init(record: String, matches: @escaping @Sendable (String) -> Bool) {
        self.record = record
        self.matches = matches
    }
}

extension RoomMachine {
    package typealias JoinRequest = RoomKit.JoinRequest
    package typealias NewFollowKey = RoomKit.NewFollowKey

    /// An input to the room. The engine's large inputs (a state, a change, a snapshot: up to
    /// 300 bytes) are boxed, so that an event is some 100 bytes: every step copies its event.
    package enum Event {
        indirect case join(JoinRequest)
        case leave(SessionID)
        /// A member's message: applied on this node, or (a shared room) checked and sent to the
        /// engine to be ordered for every node (`share`; the lease holder's driver's scroll is
        /// ordered here, `lead`).
        case message(ClientMessage, from: SessionID, sender: Sender)
        /// A member's message the engine could not take (it went away with the change in
        /// flight): applied on this node, as while the engine is away.
        case unshared(ClientMessage, from: SessionID, sender: Sender)
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
        /// The engine answered `bindKey(digest)`: the presenter key record it keeps (the first
        /// any node bound; nil: none). A follow key given with `digest` is set only if it is that one.
        case keyBound(kept: String?, digest: String)
        /// A presenter key record from an older server was hashed again the current way (its
        /// key is known good): the room takes the new record if it still holds the old one.
        case keyUpgraded(from: String, to: String)
        /// A tick of a shared room: the lease of a driver connected here is renewed; one whose
        /// node died (not a member here) is inherited by a presenter here.
        case keepLease
        /// The 5 s heartbeat of a shared room: a lease whose node died and that nobody here can
        /// inherit is checked (`lapseLease`).
        case checkLapse
        /// This node's `lapse` of `stale`'s lease took effect (the engine ordered it): when the
        /// room hears nobody drives, this node passes its place on and asks for the newest.
        case lapsed(stale: SessionID)
        /// Another node fetched or merged the room and asks for its newest state (`now`: the
        /// node's monotonic clock, nanoseconds). The lease holder's node orders it again
        /// (`leadAgain`) at most once per `SharedTiming.writeBackNanoseconds`: anyone who can
        /// publish on the channel can ask, and a flood of questions must not become a flood of
        /// states to the members; within the interval it passes the state on as it is and
        /// orders once more at the interval's end (several nodes merging at once each need one
        /// above what the others published). Another node passes its state on, at most once per
        /// interval (it still answers when the lease holder's node has died and cannot).
        case stateWanted(now: UInt64)
        /// The interval after a question ended (`scheduleOrderAgain`): ordered again now (the
        /// lease holder's node), or passed on as it is (another).
        case orderAgain(now: UInt64)
        /// The hub forgets the room (idle, or unclaimed and empty).
        case forgotten
        /// A change heard here was overtaken in the engine before it could be taken (a control
        /// change whose lease had moved on): changes were missed, as after a gap.
        case changesMissed
        /// The engine could not take the release of a session that went (`releaseControl`: it
        /// was away, or went away with the release on its way): it goes after the next merge.
        case releaseUnsent(SessionID)
        /// The engine's answer to a take or a claim (`Effect.orderControl`).
        case controlAnswered(ticket: Int, EngineResult)
        /// A take or a claim waited `SharedTiming.controlOutcomeNanoseconds`: it waits no more.
        case controlOverdue(ticket: Int)
    }

    /// What an event takes from outside the room: values read before the step (the machine
    /// changes nothing outside itself; what it takes comes back as an effect).
    package struct Context: Sendable {
        /// Bytes of documents all rooms hold, against their limit, as the step starts. What
        /// the step takes or lets go comes back as `.countDocumentBytes`.
        package var documents: ByteBudget.Allowance
        /// Whether the store is failing (a scroll does not wait for it then).
        package var storeFailing = false
        /// Whether the room is shared through the engine now (control changes go through it).
        package var shared = false
        /// The engine's `seq` clock as the step starts (`RoomEngine.seqNow`; 0 without an engine).
        package var seqNow = 0

        package init(documents: ByteBudget.Allowance, storeFailing: Bool = false, shared: Bool = false, seqNow: Int = 0) {
            self.documents = documents
            self.storeFailing = storeFailing
            self.shared = shared
            self.seqNow = seqNow
        }
    }

    package enum Effect {
        /// The session joined: its welcome.
        case welcome(RoomCore.Welcome)
        /// The session may not join; `keyFailed`: it gave a wrong key (counted against its address).
        case joinRefused(ProtocolError, keyFailed: Bool)
        /// The join's presenter key must first be hashed against this record (nil: with a fresh
        /// salt, to bind it), off the loop; the join comes again with the record it made.
        case hashKey(against: String?)
        /// The room's record is an older server's (`KeyRecord.isLegacyPresenterKey`) and the
        /// join proved its key: hash that key the current way and step `.keyUpgraded`.
        case upgradeKey(from: String)
        /// Start recording the room (if it is not yet), its bytes counted against this address.
        case record(paidBy: String)
        /// The room a follower created was claimed (a presenter joined, here or on another
        /// node) or forgotten: its creator's address no longer holds it unclaimed.
        case settleCreation(String)
        /// The last member left a room nobody claimed: forget it now (it holds a slot of the
        /// room limit and nothing worth keeping).
        case forgetUnclaimed
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
        /// The room's document grew (or shrank) by this many bytes: counted against the
        /// node's budget for documents (`Context.documents` said they fit).
        case countDocumentBytes(Int)
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
        /// The room's presenter key record changed: its presenters here proved another (or
        /// none) and must go, but for those a signed token admitted (docs/cluster.md §7.18).
        case evictPresenters
        /// A state this node ordered as the lease holder: to the engine, in order.
        indirect case publishLed(ScrollState)
        /// This node's driver lost the lease: its led state not yet written back is dropped
        /// (`RoomEngine.forgetLed`).
        case leadEnded
        /// A scroll that waited for a merge: received again on its sender's loop, now that
        /// the room knows who leads.
        indirect case resend(ClientMessage, from: Sender)
        /// A member's change, checked, for the engine to order for every node (it comes back as
        /// `.shared`): the engine's refusal goes to `sender`, and a change the engine cannot
        /// take is stepped again as `.unshared`.
        indirect case share(SharedRequest, message: ClientMessage, from: SessionID, sender: Sender)
        /// The room became private (or took another follow key): every node takes the record.
        case publishFollowKey(String)
        /// A follow key waited for the engine's word on the presenter key, and another node's
        /// key won: the follow key is not set (said in the log).
        case followKeyNotSet
        /// Keep the lease of this node's driver (`ControlAction.renew`).
        case renewLease(SessionID)
        /// Take the lease of a driver whose node died (`stale`) for a presenter here.
        case inheritLease(SessionID, name: String?, stale: SessionID)
        /// Tell every node nobody drives if `stale`'s lease lapsed (`ControlAction.lapse`).
        case lapseLease(stale: SessionID)
        /// Publish the room's state as it is (`keep`: also as the room's newest, the lease
        /// holder's node within the interval), for a node that asked.
        indirect case passOn(ScrollState, keep: Bool)
        /// Ask every other node that holds the room for its newest state (`Q`), which each
        /// passes on (`RoomEngine.askNewest`).
        case askNewest
        /// Step `.orderAgain` after this many nanoseconds, on the room's home loop.
        case scheduleOrderAgain(after: UInt64)
        /// A take or a claim whose outcome the room waits for (`ControlWait`): to the engine,
        /// its answer stepped as `.controlAnswered(ticket:)`, and `.controlOverdue(ticket:)`
        /// after `SharedTiming.controlOutcomeNanoseconds`. As the first effect of a join, the
        /// join waits for it (`continueJoin`).
        case orderControl(ControlAction, ticket: Int)
        /// The claim a presenter's join waited for has its outcome here: join again (`afterClaim`).
        case continueJoin(ticket: Int)
    }

    /// What a member's change asks of the engine.
    package enum SharedRequest: Sendable {
        case scroll(ScrollState)
        case control(ControlAction)
        case document(SharedDocument)
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
