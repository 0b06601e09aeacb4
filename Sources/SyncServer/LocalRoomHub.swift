import Deflate
import ScrollModel
import Synchronization
import Transport

/// The embedded room hub: rooms live in this process, each behind its own lock.
///
/// A change is applied under the room's lock, encoded once (plain and compressed), and
/// posted to the mailbox of every loop that has members of the room, in order. Each loop
/// then writes the same bytes to all of its members.
public final class LocalRoomHub: RoomHub {
    public struct Options: Sendable {
        /// Presenters must give a key (`key=…`) to create or join a room.
        public var requirePresenterKey = false
        /// A room with no members is forgotten after this long: 10 minutes, so a presenter
        /// whose connection drops can come back to the same state.
        public var roomIdleSeconds = 600
        /// Replace queued states with newer ones (on for users; off only to measure
        /// delivery of every state).
        public var conflation = true
        /// Presence goes out at most this often per room, per 2,500 members: the first change
        /// at once, later ones within the interval together at its end. 250 ms keeps counts
        /// current for people; in a room of 10,000 a join storm costs one presence broadcast
        /// a second (10,000 writes), not one per join.
        public var presenceIntervalMilliseconds = 250
        public init() {}
    }

    private final class Room: @unchecked Sendable {
        struct Guarded {
            var core: RoomCore
            var locals: [LocalRoom?]
            var emptySince: UInt64?
            var compressingMembers = 0
            /// Forgotten by the idle sweep; a join that finds it so starts over.
            var removed = false
            /// When presence was last sent, and whether a coalesced send is scheduled.
            var presenceSentAt: UInt64 = 0
            var presenceScheduled = false
        }

        let guarded: Mutex<Guarded>
        /// Compressor for shared frames; used only with the room locked.
        let deflater = Deflater(windowBits: 15, noContextTakeover: true)

        init(name: String, loops: Int) {
            guarded = Mutex(Guarded(core: RoomCore(name: name), locals: Array(repeating: nil, count: loops)))
        }
    }

    public let options: Options
    public let counters = RoomCounters()
    private let loops: [EventLoop]
    private let rooms = Mutex<[String: Room]>([:])

    public init(loops: [EventLoop], options: Options = .init()) {
        self.loops = loops
        self.options = options
        loops.first?.onTick { [weak self] in self?.forgetIdleRooms() }
    }

    /// Names of the rooms held now.
    public var roomNames: [String] { rooms.withLock { Array($0.keys) } }

    public func join(_ member: RoomMember, room name: String, role: Role, key: String?) -> Result<RoomCore.Welcome, ProtocolError> {
        while true {
            let room = rooms.withLock { rooms in
                if let room = rooms[name] { return room }
                let room = Room(name: name, loops: loops.count)
                rooms[name] = room
                return room
            }
            if let result = join(member, room: room, name: name, role: role, key: key) { return result }
        }
    }

    private func join(_ member: RoomMember, room: Room, name: String, role: Role, key: String?) -> Result<RoomCore.Welcome, ProtocolError>? {
        let loop = member.peer.channel.loop
        return room.guarded.withLock { guarded in
            guard !guarded.removed else { return nil }
            switch guarded.core.join(member.id, role: role, name: member.name, key: key, keyRequired: options.requirePresenterKey) {
            case .failure(let error):
                return .failure(error)
            case .success(let (welcome, broadcasts)):
                let local = guarded.locals[loop.index] ?? LocalRoom(loop: loop, conflation: options.conflation, counters: counters)
                guarded.locals[loop.index] = local
                local.add(member)
                member.room = name
                member.lastSeq = welcome.state?.seq ?? 0
                member.lastDocument = welcome.document?.fingerprint
                if member.windowBits != nil { guarded.compressingMembers += 1 }
                guarded.emptySince = nil
                publish(broadcasts, in: &guarded, room: room, loop: loop)
                return .success(welcome)
            }
        }
    }

    public func receive(_ message: ClientMessage, from member: RoomMember) -> ProtocolError? {
        guard let room = member.room.flatMap({ name in rooms.withLock { $0[name] } }) else {
            return ProtocolError(.badMessage, "not in a room")
        }
        return room.guarded.withLock { guarded in
            switch guarded.core.receive(message, from: member.id) {
            case .failure(let error): return error
            case .success(let broadcasts):
                publish(broadcasts, in: &guarded, room: room, loop: member.peer.channel.loop)
                return nil
            }
        }
    }

    public func leave(_ member: RoomMember) {
        guard let name = member.room, let room = rooms.withLock({ $0[name] }) else { return }
        member.room = nil
        let loop = member.peer.channel.loop
        room.guarded.withLock { guarded in
            guarded.locals[loop.index]?.remove(member)
            if member.windowBits != nil { guarded.compressingMembers -= 1 }
            let broadcasts = guarded.core.leave(member.id)
            if guarded.core.isEmpty { guarded.emptySince = loop.now }
            publish(broadcasts, in: &guarded, room: room, loop: loop)
        }
    }

    /// Encodes each broadcast once and posts it to every loop with members.
    /// `loop` is the caller's loop, where a coalesced presence send is scheduled.
    private func publish(_ broadcasts: [Broadcast], in guarded: inout Room.Guarded, room: Room, loop: EventLoop) {
        let deflater = guarded.compressingMembers > 0 ? room.deflater : nil
        for broadcast in broadcasts {
            let item: LocalRoom.Item
            switch broadcast {
            case .presence:
                let members = guarded.core.members.count
                let interval = UInt64(options.presenceIntervalMilliseconds) * 1_000_000 * UInt64(1 + members / 2500)
                guard !guarded.presenceScheduled else { continue }
                let due = guarded.presenceSentAt + interval
                if loop.now >= due {
                    guarded.presenceSentAt = loop.now
                } else {
                    guarded.presenceScheduled = true
                    loop.schedule(after: due - loop.now) { [self] in sendPresence(room, loop: loop) }
                    continue
                }
                item = .presence(BroadcastFrame(text: ServerMessage.presence(guarded.core.presence), deflater: deflater))
            case .state(let state):
                item = .state(seq: state.seq, BroadcastFrame(text: ServerMessage.state(state), deflater: deflater))
            case .driver(let id, let name):
                item = .reliable(BroadcastFrame(text: ServerMessage.driver(id, name: name), deflater: deflater))
            case .document(let document):
                item = .document(fingerprint: document.fingerprint, BroadcastFrame(text: ServerMessage.document(document), deflater: deflater))
            }
            for case let local? in guarded.locals { local.post(item) }
        }
    }

    /// The end of a presence interval: send the counts as they are now.
    private func sendPresence(_ room: Room, loop: EventLoop) {
        room.guarded.withLock { guarded in
            guarded.presenceScheduled = false
            guard !guarded.removed else { return }
            guarded.presenceSentAt = loop.now
            let deflater = guarded.compressingMembers > 0 ? room.deflater : nil
            let item = LocalRoom.Item.presence(BroadcastFrame(text: ServerMessage.presence(guarded.core.presence), deflater: deflater))
            for case let local? in guarded.locals { local.post(item) }
        }
    }

    private func forgetIdleRooms() {
        guard let now = loops.first?.now else { return }
        let idle = UInt64(options.roomIdleSeconds) * 1_000_000_000
        rooms.withLock { rooms in
            rooms = rooms.filter { _, room in
                room.guarded.withLock { guarded in
                    guard let since = guarded.emptySince, now - since >= idle else { return true }
                    guarded.removed = true
                    return false
                }
            }
        }
    }
}
