import Access
import Logging
import RoomKit
import ScrollModel
import Synchronization
import Transport
import WebSocketCore

/// A member's message: sent to the engine to be ordered for every node, or applied here
/// (alone, or while the engine is away), a scroll held while the store has not yet written
/// a `seq` ceiling above it.
extension LocalRoomHub {
    public func receive(_ message: ClientMessage, from member: RoomMember) -> ProtocolError? {
        guard let room = member.roomHandle as? Room else { return ProtocolError(.badMessage, "not in a room") }
        if let engine, engine.isAvailable {
            switch share(message, from: member, room: room, engine: engine) {
            case .sent: return nil
            case .refused(let error): return error
            case .led(let later): return finish(later, room: room, answering: member)
            case .local: break
            }
        }
        return receiveHere(message, from: member, room: room)
    }

    /// What became of a message with an engine.
    enum Sharing {
        /// Sent to the engine, which brings the change back to every node.
        case sent
        case refused(ProtocolError)
        /// A change this node keeps to itself (`follow`).
        case local
        /// The driver's scroll, ordered here (this node holds the lease): what is left to do.
        case led([Room.Machine.Effect])
    }

    /// Sends a change to the engine, which orders it and brings it back to every node.
    func share(_ message: ClientMessage, from sender: RoomMember, room: Room, engine: any RoomEngine) -> Sharing {
        let name = room.name
        let loop = sender.peer.channel.loop
        let member = Unchecked(sender)
        let done: @Sendable (EngineResult) -> Void = { [self] result in
            loop.execute { [self] in
                let member = member.value
                guard member.roomHandle === room else { return }
                switch result {
                case .done: break
                case .refused(let error): member.peer.send(text: ServerMessage.error(error))
                case .unavailable:
                    // Redis went away with the change in flight: apply it here, as while it is away.
                    if let error = receiveHere(message, from: member, room: room) { member.peer.send(text: ServerMessage.error(error)) }
                }
            }
        }
        return room.guarded.withLock { guarded -> Sharing in
            let role = guarded.core.members[sender.id]?.role
            switch message {
            case .scroll(let update) where guarded.machine.takesLead(sender.id):
                // The driver is this node's member, so this node holds the lease: it orders
                // the state, its members hear it at once, and the engine publishes it as it is.
                // (While the room is merged after an outage, the machine holds it until the
                // merge says who leads.)
                return .led(step(.lead(update, from: sender.id, sender: MemberReference(sender)), in: &guarded, room: room, loop: loop))
            case .scroll(let update):
                let proposed = guarded.machine.proposed
                let previous = proposed.flatMap { SessionID($0.by) } == sender.id ? proposed : guarded.core.state
                switch guarded.core.proposeScroll(update, from: sender.id, after: .some(previous)) {
                case .failure(let error): return .refused(error)
                case .success(let state):
                    guarded.machine.proposed = state
                    engine.scroll(room: name, session: sender.id.description, suffix: stateSuffix(state), done: done)
                }
            case .control(let take):
                guard role == .presenter else { return .refused(ProtocolError(.unauthorized, "only presenters may take control")) }
                if take {
                    guard guarded.core.driver != sender.id else { return .sent }
                    engine.control(room: name, .take(session: sender.id.description, name: guarded.core.names[sender.id]), done: done)
                } else {
                    guard guarded.core.driver == sender.id else { return .refused(ProtocolError(.notDriver, "you do not drive this room")) }
                    engine.control(room: name, .release(session: sender.id.description), done: done)
                }
            case .document(let documentName, let format, let text):
                guard role == .presenter else { return .refused(ProtocolError(.unauthorized, "only presenters may share a document")) }
                if let refusal = documents.refusal(forGrowth: ByteBudget.growth(replacing: guarded.core.document, with: text)) {
                    return .refused(refusal)
                }
                let document = SharedDocument(name: documentName, format: format, text: text, by: sender.id.description)
                engine.share(document: ServerMessage.document(document), room: name, done: done)
            case .follow:
                return .local
            }
            return .sent
        }
    }

    /// Applies a message on this node alone (no engine, or it is unavailable); returns the
    /// refusal to answer it with.
    func receiveHere(_ message: ClientMessage, from member: RoomMember, room: Room) -> ProtocolError? {
        let effects = step(.message(message, from: member.id, sender: MemberReference(member)), in: room, loop: member.peer.channel.loop)
        return finish(effects, room: room, answering: member)
    }

    /// Runs `event` through the room's machine under the room's lock, and carries out there
    /// what must keep the machine's order: members hear broadcasts in the order the room made
    /// them, the store is handed the newest record, the engine gets control and key changes in
    /// order (all of them only queue). The rest is returned, for `finish` after the lock.
    /// `loop` is the caller's (presence is timed there).
    func step(_ event: Room.Machine.Event, in room: Room, loop: EventLoop) -> [Room.Machine.Effect] {
        room.guarded.withLock { guarded in step(event, in: &guarded, room: room, loop: loop) }
    }

    func step(_ event: Room.Machine.Event, in guarded: inout Room.Guarded, room: Room, loop: EventLoop) -> [Room.Machine.Effect] {
        carryOut(guarded.machine.step(event, machineContext), in: &guarded, room: room, loop: loop)
    }

    /// What a room's step needs from the node.
    var machineContext: Room.Machine.Context {
        .init(documents: documents, storeFailing: store?.health.failing == true, shared: engine?.isAvailable == true)
    }

    /// The part of a step's effects carried out under the room's lock (see `step`): the
    /// broadcasts last, in order. Returns the effects, for `finish` after the lock (which
    /// carries out the rest and passes over these): no arrays of their own per step.
    func carryOut(_ effects: [Room.Machine.Effect], in guarded: inout Room.Guarded, room: Room, loop: EventLoop) -> [Room.Machine.Effect] {
        var led: ScrollState?
        for effect in effects {
            switch effect {
            case .save: save(&guarded)
            case .evictFollowers: evictFollowers(in: &guarded, room: room)
            // Control and keys go to the engine in the order the room changed them (a release
            // after a leave must not overtake the claim of the join that followed): queued here.
            case .bindKey(let digest):
                // The engine keeps the first record any node bound; every node takes that one.
                // A follow key given with this key is set only if it is that one.
                let followKey = guarded.followKeyAfterBinding
                guarded.followKeyAfterBinding = nil
                engine?.bindKey(room: room.name, digest: digest) { [self] kept in
                    room.guarded.withLock { guarded in
                        guarded.core.adopt(presenterKey: kept)
                        guard let followKey else { return }
                        guard let kept, ConstantTime.equal(kept.utf8, digest.utf8) else {
                            return logger.warning("follow key not set: another node bound the room's presenter key first", metadata: ["room": "\(room.name)"])
                        }
                        setFollowKey(followKey, in: &guarded, room: room, shared: true)
                    }
                }
            case .claimControl(let id):
                engine?.control(room: room.name, .claim(session: id.description, name: guarded.core.names[id])) { _ in }
            case .releaseControl(let id):
                engine?.control(room: room.name, .release(session: id.description)) { _ in }
            case .publishLed(let state): led = state
            case .welcome, .joinRefused, .broadcast, .refuse, .releaseHeld, .refusedShared, .resync, .resend: break
            }
        }
        var stateText: [UInt8]?
        for case .broadcast(let broadcast) in effects {
            if let text = publish(broadcast, in: &guarded, room: room, loop: loop) { stateText = text }
        }
        if let led, let engine {
            // The bytes members got (the led state is the step's state broadcast): encoded once.
            engine.publish(led: stateText ?? ServerMessage.state(led), seq: led.seq, room: room.name, keep: true)
        }
        return effects
    }

    /// Carries out what a step left for after the room's lock: refusals to members, a held
    /// scroll's release on its sender's loop, what the engine brought and could not be taken.
    /// Returns the refusal meant for `member` (whose caller answers it).
    @discardableResult
    func finish(_ effects: [Room.Machine.Effect], room: Room, answering member: RoomMember? = nil) -> ProtocolError? {
        var answer: ProtocolError?
        for effect in effects {
            switch effect {
            case .refuse(let error, let sender) where sender.object === member:
                answer = error
            case .refuse(let error, let sender):
                sender.member.peer.channel.loop.execute { sender.member.peer.send(text: ServerMessage.error(error)) }
            case .releaseHeld(let sender):
                // Applied on the sender's loop, where its member lives (the newest held scroll then).
                let loop = sender.member.peer.channel.loop
                loop.execute { [self] in finish(step(.releaseHeld, in: room, loop: loop), room: room) }
            case .resend(let message, let sender):
                let loop = sender.member.peer.channel.loop
                loop.execute { [self] in
                    let member = sender.member
                    guard member.roomHandle === room else { return }
                    if let error = receive(message, from: member) { member.peer.send(text: ServerMessage.error(error)) }
                }
            case .refusedShared(let refusal):
                engine?.refused(refusal, room: room.name)
            case .resync:
                resyncRoom(room, now: loops.first?.now ?? 0)
            case .broadcast, .save, .evictFollowers, .bindKey, .claimControl, .releaseControl, .publishLed, .welcome, .joinRefused:
                break  // carried out under the lock (`carryOut`), or by the join that asked
            }
        }
        return answer
    }

    /// The store wrote `ceiling` for room `name`: seq up to it may be used; a held scroll goes.
    func seqWritten(room name: String, ceiling: Int) {
        guard let room = rooms.withLock({ $0[name] }), let loop = loops.first else { return }
        finish(step(.ceilingWritten(ceiling), in: room, loop: loop), room: room)
    }

    /// While the store cannot write (disk full), a room does not wait for it: held scrolls go
    /// out, and `seq` is kept only in memory until the store writes again (the failure is
    /// logged and shown in /healthz; a crash in that time may repeat `seq` numbers).
    func releaseHeldScrollsWhileStoreFails() {
        guard let store, store.health.failing, let loop = loops.first else { return }
        let all = rooms.withLock { Array($0.values) }
        for room in all { finish(step(.storeFailing, in: room, loop: loop), room: room) }
    }
}
