package import Access
import Logging
package import RoomKit
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
        return step(.message(message, from: member.id, sender: MemberReference(member)), in: room, on: member.peer.channel.loop, answering: member)
    }

    /// Sends a member's checked change to the engine, which orders it and brings it back to
    /// every node; its refusal goes to the member, and a change the engine could not take
    /// (it went away with the change in flight) is applied here, as while it is away.
    func share(_ request: Room.Machine.SharedRequest, message: ClientMessage, from sender: MemberReference, room: Room) {
        guard let engine else { return }
        let loop = sender.member.peer.channel.loop
        let done: @Sendable (EngineResult) -> Void = { [self] result in
            loop.execute { [self] in
                let member = sender.member
                guard member.roomHandle === room else { return }
                switch result {
                case .done, .ordered: break
                case .refused(let error): member.peer.send(text: ServerMessage.error(error))
                case .unavailable:
                    if let error = step(.unshared(message, from: member.id, sender: sender), in: room, on: loop, answering: member) {
                        member.peer.send(text: ServerMessage.error(error))
                    }
                }
            }
        }
        switch request {
        case .scroll(let state): engine.scroll(room: room.name, session: sender.member.id.description, suffix: stateSuffix(state), seq: state.seq, done: done)
        case .control(let action): engine.control(room: room.name, action, done: done)
        case .document(let document): engine.share(document: ServerMessage.document(document), room: room.name, done: done)
        }
    }

    /// The store wrote `ceiling` for room `name` (on its writer thread): seq up to it may be
    /// used; a held scroll goes. Stepped on the room's home loop.
    func seqWritten(room name: String, ceiling: Int) {
        guard let room = rooms.withLock({ $0[name] }), let loop = homeLoop else { return }
        loop.execute { [self] in step(.ceilingWritten(ceiling), in: room, on: loop) }
    }

    /// While the store cannot write (disk full), a room does not wait for it: held scrolls go
    /// out, and `seq` is kept only in memory until the store writes again (the failure is
    /// logged and shown in /healthz; a crash in that time may repeat `seq` numbers).
    func releaseHeldScrollsWhileStoreFails() {
        guard let store, store.health.failing, let loop = homeLoop else { return }
        let all = rooms.withLock { Array($0.values) }
        for room in all { step(.storeFailing, in: room, on: loop) }
    }
}
