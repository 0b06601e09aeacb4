import Deflate
import Logging
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
        /// Rooms held at once; a request for a new room beyond it is refused (503).
        public var maxRooms = 10_000
        /// Members of one room; a request to join a full room is refused (503).
        public var maxMembersPerRoom = 16_384
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

        init(core: RoomCore, loops: Int) {
            guarded = Mutex(Guarded(core: core, locals: Array(repeating: nil, count: loops)))
        }
    }

    public let options: Options
    public let counters = RoomCounters()
    private let loops: [EventLoop]
    private let rooms = Mutex<[String: Room]>([:])
    private let store: (any RoomStore)?
    private let logger: Logger

    /// - Parameter store: where rooms are kept across restarts; the rooms in it are
    ///   restored now (empty, so they expire after `roomIdleSeconds` unless someone joins).
    public init(loops: [EventLoop], options: Options = .init(), store: (any RoomStore)? = nil,
                logger: Logger = Logger(label: "scrollsync")) throws(StoreError) {
        self.loops = loops
        self.options = options
        self.store = store
        self.logger = logger
        let restored = try store?.loadAll() ?? []
        let now = loops.first?.now ?? 0
        rooms.withLock { rooms in
            for stored in restored {
                let core = RoomCore(name: stored.name, state: stored.state, document: stored.document,
                                    presenterKey: stored.keyDigest.map { Array($0.utf8) })
                let room = Room(core: core, loops: loops.count)
                room.guarded.withLock { $0.emptySince = now }
                rooms[stored.name] = room
            }
        }
        if !restored.isEmpty { logger.info("rooms restored", metadata: ["count": "\(restored.count)"]) }
        loops.first?.onTick { [weak self] in self?.forgetIdleRooms() }
    }

    /// Names of the rooms held now.
    public var roomNames: [String] { rooms.withLock { Array($0.keys) } }

    /// One room as `GET /rooms` lists it.
    public struct RoomSummary: Sendable {
        public var name: String
        public var presenters: Int
        public var followers: Int
        public var detached: Int
        public var seq: Int
        public var driving: Bool
        public var document: String?
    }

    /// Every room with its member counts and last `seq`, by name.
    public func summaries() -> [RoomSummary] {
        let all = rooms.withLock { Array($0) }
        return all.map { name, room in
            room.guarded.withLock { guarded in
                let core = guarded.core
                return RoomSummary(name: name, presenters: core.presence.presenters, followers: core.presence.followers,
                                   detached: core.presence.detached, seq: core.state?.seq ?? 0, driving: core.driver != nil,
                                   document: core.document?.name)
            }
        }.sorted { $0.name < $1.name }
    }

    public func admission(room name: String) -> String? {
        let (room, count) = rooms.withLock { ($0[name], $0.count) }
        guard let room else {
            return count >= options.maxRooms ? "server at its room limit (\(options.maxRooms))" : nil
        }
        let members = room.guarded.withLock { $0.core.members.count }
        return members >= options.maxMembersPerRoom ? "room \(name) is full (\(options.maxMembersPerRoom) members)" : nil
    }

    public func join(_ member: RoomMember, room name: String, role: Role, key: String?) -> Result<RoomCore.Welcome, ProtocolError> {
        let digest = key.map { $0.isEmpty ? $0 : PresenterKey.digest($0, room: name) }
        while true {
            let (room, created) = rooms.withLock { rooms in
                if let room = rooms[name] { return (room, false) }
                let room = Room(core: RoomCore(name: name), loops: loops.count)
                rooms[name] = room
                return (room, true)
            }
            if created { logger.info("room created", metadata: ["room": "\(name)"]) }
            if let result = join(member, room: room, name: name, role: role, key: digest) { return result }
        }
    }

    private func join(_ member: RoomMember, room: Room, name: String, role: Role, key: String?) -> Result<RoomCore.Welcome, ProtocolError>? {
        let loop = member.peer.channel.loop
        return room.guarded.withLock { guarded in
            guard !guarded.removed else { return nil }
            let hadKey = guarded.core.hasPresenterKey
            switch guarded.core.join(member.id, role: role, name: member.name, key: key, keyRequired: options.requirePresenterKey) {
            case .failure(let error):
                return .failure(error)
            case .success(let (welcome, broadcasts)):
                if !hadKey && guarded.core.hasPresenterKey { save(guarded.core) }
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
                if broadcasts.contains(where: \.isStoredChange) { save(guarded.core) }
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

    private func save(_ core: RoomCore) {
        store?.save(StoredRoom(name: core.name, state: core.state, document: core.document, keyDigest: core.presenterKeyText))
    }

    private func forgetIdleRooms() {
        guard let now = loops.first?.now else { return }
        let idle = UInt64(options.roomIdleSeconds) * 1_000_000_000
        var forgotten = [String]()
        rooms.withLock { rooms in
            rooms = rooms.filter { name, room in
                room.guarded.withLock { guarded in
                    guard let since = guarded.emptySince, now - since >= idle else { return true }
                    guarded.removed = true
                    forgotten.append(name)
                    return false
                }
            }
        }
        for name in forgotten {
            store?.remove(name)
            logger.info("room expired", metadata: ["room": "\(name)", "idleSeconds": "\(options.roomIdleSeconds)"])
        }
    }
}

extension Broadcast {
    /// Changes the store keeps: states and documents.
    var isStoredChange: Bool {
        switch self {
        case .state, .document: true
        case .presence, .driver: false
        }
    }
}
