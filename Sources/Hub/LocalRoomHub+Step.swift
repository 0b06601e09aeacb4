package import Access
package import RoomKit
import ScrollModel
import Transport

/// The one way a room changes (STYLE 22: the room steps, the hub carries out). Under the
/// room's lock its machine steps an event, and the effects are carried out at once, in the
/// order the machine gave them, where that order matters and nothing waits: members'
/// mailboxes, the store's queue, the engine's, other loops' task queues. What takes the
/// room's lock again (a fetch), what is logged, and the refusal for the member whose message
/// it was wait for the lock's release. Every step runs on a loop: a member's on its own, the
/// engine's, the store's and the tick's on the first (`homeLoop`).
extension LocalRoomHub {
    /// What the steps under one lock leave for after it.
    struct Steps: Sendable {
        /// The room and the loop are `withRoom`'s own arguments, alive for as long as its
        /// `Steps` (which never leaves it): held unretained, a `Steps` is made and destroyed
        /// without retaining or releasing them (some 50 instructions a `withRoom`;
        /// docs/benchmarks-log.md, "the join at join-45").
        unowned(unsafe) let room: Room
        /// The loop the steps run on (presence is timed there).
        unowned(unsafe) let loop: EventLoop
        /// The member whose message is stepped: its refusal goes to the caller, which answers it.
        let member: ObjectIdentifier?
        fileprivate var resync = false
        fileprivate var forgetUnclaimed = false
        /// A join asked for the room's recording (`.record`).
        fileprivate(set) var recordingAsked = false
        /// What few steps leave, boxed (made when one does): a `Steps` of flags and unretained
        /// references is destroyed with one check of `rare` instead of releasing an error, a
        /// string and an array (some 80 instructions a `withRoom`).
        private var rare: Rare?

        /// Only the `withRoom` that made it reads it, on its loop.
        private final class Rare: @unchecked Sendable {
            var answer: ProtocolError?
            var recordingProblem: String?
            var refusals: [SharedInput.Refusal] = []
        }

        /// The refusal for `member`.
        fileprivate(set) var answer: ProtocolError? {
            get { rare?.answer }
            set { boxed.answer = newValue }
        }
        /// Why the recording a join asked for could not start.
        fileprivate(set) var recordingProblem: String? {
            get { rare?.recordingProblem }
            set { boxed.recordingProblem = newValue }
        }
        fileprivate var refusals: [SharedInput.Refusal] {
            get { rare?.refusals ?? [] }
            set { boxed.refusals = newValue }
        }

        private var boxed: Rare {
            mutating get {
                if let rare { return rare }
                let made = Rare()
                rare = made
                return made
            }
        }

        init(room: Room, loop: EventLoop, member: RoomMember?) {
            self.room = room
            self.loop = loop
            self.member = member.map(ObjectIdentifier.init)
        }
    }

    /// Where a room's events that come from no member are stepped: the engine's answers, the
    /// store's, the tick's.
    var homeLoop: EventLoop? { loops.first }

    /// Steps `event` in `room` and carries out its effects (`withRoom`); returns the refusal
    /// for `member`, whose caller answers it.
    @discardableResult
    func step(_ event: Room.Machine.Event, in room: Room, on loop: EventLoop, answering member: RoomMember? = nil) -> ProtocolError? {
        withRoom(room, on: loop, answering: member) { guarded, steps in step(event, in: &guarded, &steps) }.answer
    }

    /// Runs `body` under the room's lock, where it steps the room (`step(_:in:_:)`, as often as
    /// it needs) and keeps what the hub holds of the room beside the machine; then carries out
    /// what waited for the lock's release. Returns `body`'s value and the refusal for `member`.
    @discardableResult
    func withRoom<T: Sendable>(_ room: Room, on loop: EventLoop, answering member: RoomMember? = nil,
                     _ body: (inout Room.Guarded, inout Steps) -> T) -> (value: T, answer: ProtocolError?) {
        loop.assertInEventLoop()
        var steps = Steps(room: room, loop: loop, member: member)
        let value = room.guarded.withLock { guarded in body(&guarded, &steps) }
        for refusal in steps.refusals { engine?.refused(refusal, room: room.name) }
        if steps.resync { resyncRoom(room, now: loop.now) }
        if steps.forgetUnclaimed { removeIfEmptyAndUnclaimed(room, on: loop) }
        return (value, steps.answer)
    }

    /// Steps `event` under the room's lock (`withRoom`) and carries out its effects; returns
    /// them (a join reads its welcome).
    @discardableResult
    func step(_ event: Room.Machine.Event, in guarded: inout Room.Guarded, _ steps: inout Steps) -> [Room.Machine.Effect] {
        let effects = guarded.machine.step(event, machineContext)
        carryOut(effects, in: &guarded, &steps)
        return effects
    }

    /// What a room's step needs from the node, read as it starts.
    var machineContext: Room.Machine.Context {
        .init(documents: documents.allowance, storeFailing: store?.health.failing == true, shared: engine?.isAvailable == true,
              seqNow: engine?.seqNow ?? 0)
    }

    /// Said in the log out of line: read in `carryOut`, the logger (a class of `var`s) is
    /// checked for exclusive access once per call, at its start, whatever the effects (some 75
    /// instructions a step; docs/benchmarks-log.md, "the join at join-45").
    @inline(never)
    func followKeyNotSet(room: Room) {
        logger.warning("follow key not set: another node bound the room's presenter key first", metadata: ["room": "\(room.name)"])
    }

    /// Carries out a step's effects, in order: the one place that does.
    func carryOut(_ effects: [Room.Machine.Effect], in guarded: inout Room.Guarded, _ steps: inout Steps) {
        let room = steps.room
        var stateText: (seq: Int, text: [UInt8])?
        for effect in effects {
            switch effect {
            case .broadcast(let broadcast):
                if let text = publish(broadcast, in: &guarded, room: room, loop: steps.loop), case .state(let state) = broadcast {
                    stateText = (state.seq, text)
                }
            case .publishLed(let state):
                // The bytes members got (the led state is the step's state broadcast): encoded once.
                let text = stateText?.seq == state.seq ? stateText!.text : ServerMessage.state(state)
                engine?.publish(led: text, seq: state.seq, by: state.by, room: room.name, keep: true)
            case .leadEnded:
                engine?.forgetLed(room: room.name)
            case .save:
                save(&guarded)
            case .countDocumentBytes(let bytes):
                documents.count(bytes)
            case .evictFollowers:
                evictFollowers(in: &guarded, room: room)
            case .evictPresenters:
                evictPresenters(in: &guarded, room: room)
            // Control and keys go to the engine in the order the room changed them (a release
            // after a leave must not overtake the claim of the join that followed).
            case .bindKey(let digest):
                // The engine keeps the first record any node bound; every node takes that one.
                engine?.bindKey(room: room.name, digest: digest) { [self] kept in
                    guard let loop = homeLoop else { return }
                    step(.keyBound(kept: kept, digest: digest), in: room, on: loop)
                }
            case .publishFollowKey(let record):
                engine?.setFollowKey(room: room.name, record: record)
            case .followKeyNotSet:
                followKeyNotSet(room: room)
            case .claimControl(let id):
                engine?.control(room: room.name, .claim(session: id.description, name: guarded.core.names[id])) { _ in }
            case .releaseControl(let id):
                engine?.control(room: room.name, .release(session: id.description)) { [self] result in
                    guard case .unavailable = result, let loop = homeLoop else { return }
                    step(.releaseUnsent(id), in: room, on: loop)  // (sent again after the merge)
                }
            case .renewLease(let id):
                engine?.control(room: room.name, .renew(session: id.description)) { _ in }
            case .inheritLease(let id, let name, let stale):
                engine?.control(room: room.name, .inherit(session: id.description, name: name, stale: stale.description)) { _ in }
            case .lapseLease(let stale):
                // Answered on the engine's loop (the home loop) before the change is heard there:
                // the confirmation of the change it publishes is read after it, on the same link.
                engine?.control(room: room.name, .lapse(stale: stale.description)) { [self] result in
                    guard case .ordered = result, let loop = homeLoop else { return }
                    step(.lapsed(stale: stale), in: room, on: loop)
                }
            case .share(let request, let message, _, let sender):
                share(request, message: message, from: sender, room: room)
            case .passOn(let state, let keep):
                engine?.publish(led: ServerMessage.state(state), seq: state.seq, by: state.by, room: room.name, keep: keep)
            case .askNewest:
                engine?.askNewest(room: room.name)
            case .scheduleOrderAgain(let delay):
                steps.loop.schedule(after: delay) { [weak self] in self?.orderAgain(room) }
            case .orderControl(let action, let ticket):
                orderControl(action, ticket: ticket, room: room, loop: steps.loop)
            case .continueJoin(let ticket):
                // Queued on the member's loop: it runs after this lock's release.
                guarded.joinsAfterClaim.removeValue(forKey: ticket)?()
            case .refuse(let error, let sender) where ObjectIdentifier(sender.object) == steps.member:
                steps.answer = error
            case .refuse(let error, let sender):
                sender.member.peer.channel.loop.execute { sender.member.peer.send(text: ServerMessage.error(error)) }
            case .releaseHeld(let sender):
                // Applied on the sender's loop, where its member lives (the newest held scroll then).
                let loop = sender.member.peer.channel.loop
                loop.execute { [self] in step(.releaseHeld, in: room, on: loop) }
            case .resend(let message, let sender):
                let loop = sender.member.peer.channel.loop
                loop.execute { [self] in
                    let member = sender.member
                    guard member.roomHandle === room else { return }
                    if let error = receive(message, from: member) { member.peer.send(text: ServerMessage.error(error)) }
                }
            case .refusedShared(let refusal):
                steps.refusals.append(refusal)
            case .resync:
                steps.resync = true
            case .record(let address):
                steps.recordingAsked = true
                steps.recordingProblem = startRecording(in: &guarded, room: room, now: steps.loop.now, address: address)
            case .settleCreation(let address):
                creationLimits.settled(address: address)
            case .forgetUnclaimed:
                steps.forgetUnclaimed = true
            case .welcome, .joinRefused, .hashKey, .upgradeKey:
                break  // read by the join that asked (the raw key is its own)
            }
        }
    }
}
