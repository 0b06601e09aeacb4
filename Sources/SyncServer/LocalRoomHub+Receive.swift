import Logging
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
            case .scroll(let update):
                let previous = guarded.proposed.flatMap { SessionID($0.by) } == sender.id ? guarded.proposed : guarded.core.state
                switch guarded.core.proposeScroll(update, from: sender.id, after: .some(previous)) {
                case .failure(let error): return .refused(error)
                case .success(let state):
                    guarded.proposed = state
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
                if let refusal = documents.refusal(forGrowth: DocumentBudget.growth(replacing: guarded.core.document, with: text)) {
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

    /// Applies a message on this node alone (no engine, or it is unavailable).
    func receiveHere(_ message: ClientMessage, from member: RoomMember, room: Room) -> ProtocolError? {
        room.guarded.withLock { guarded in
            if case .scroll(let update) = message,
               guarded.held != nil || (guarded.seq.mustWait(after: guarded.core.lastSeq) && store?.health.failing == false) {
                // The store has not yet written a ceiling above the next seq: the scroll waits
                // for it, so that seq never goes back after a crash. A newer one replaces it,
                // also while its release is on its way (the release applies the newest).
                if case .failure(let error) = guarded.core.proposeScroll(update, from: member.id) { return error }
                let waiting = guarded.held != nil
                guarded.held = (message, Unchecked(member))
                if !waiting { save(&guarded) }
                return nil
            }
            return apply(message, from: member, in: &guarded, room: room)
        }
    }

    func apply(_ message: ClientMessage, from member: RoomMember, in guarded: inout Room.Guarded, room: Room) -> ProtocolError? {
        var documentGrowth = 0
        if case .document(_, _, let text) = message {
            documentGrowth = DocumentBudget.growth(replacing: guarded.core.document, with: text)
            if let refusal = documents.reserve(documentGrowth) { return refusal }
        }
        switch guarded.core.receive(message, from: member.id) {
        case .failure(let error):
            documents.release(documentGrowth)
            return error
        case .success(let broadcasts):
            if broadcasts.contains(where: \.isStoredChange) { save(&guarded) }
            publish(broadcasts, in: &guarded, room: room, loop: member.peer.channel.loop)
            return nil
        }
    }

    /// The store wrote `ceiling` for room `name`: seq up to it may be used; a held scroll goes.
    func seqWritten(room name: String, ceiling: Int) {
        guard let room = rooms.withLock({ $0[name] }) else { return }
        releaseHeldScroll(room) { guarded in
            guarded.seq.wrote(ceiling, lastSeq: guarded.core.lastSeq)
        }
    }

    /// Applies the room's held scroll when `ready` says so: on its sender's loop, where its
    /// member lives, taking the newest held scroll when it runs.
    func releaseHeldScroll(_ room: Room, when ready: (inout Room.Guarded) -> Bool) {
        let loop = room.guarded.withLock { guarded -> EventLoop? in
            guard ready(&guarded), !guarded.releasing, let held = guarded.held else { return nil }
            guarded.releasing = true
            return held.member.value.peer.channel.loop
        }
        loop?.execute { [self] in
            let outcome = room.guarded.withLock { guarded -> (RoomMember, ProtocolError?)? in
                guarded.releasing = false
                guard let (message, member) = guarded.held else { return nil }
                guarded.held = nil
                // Still in the room? (Asked of the room, under its lock: the member may live on another loop.)
                guard guarded.core.members[member.value.id] != nil else { return nil }
                return (member.value, apply(message, from: member.value, in: &guarded, room: room))
            }
            if case let (member, error?)? = outcome {
                let target = Unchecked(member)
                member.peer.channel.loop.execute { target.value.peer.send(text: ServerMessage.error(error)) }
            }
        }
    }

    /// While the store cannot write (disk full), a room does not wait for it: held scrolls go
    /// out, and `seq` is kept only in memory until the store writes again (the failure is
    /// logged and shown in /healthz; a crash in that time may repeat `seq` numbers).
    func releaseHeldScrollsWhileStoreFails() {
        guard let store, store.health.failing else { return }
        let all = rooms.withLock { Array($0.values) }
        for room in all { releaseHeldScroll(room) { _ in true } }
    }
}
