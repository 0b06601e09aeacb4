import Deflate
import Logging
import ScrollModel
import Synchronization
import Transport
import WebSocketCore

/// The room hub: rooms live in this process, each behind its own lock.
///
/// A change is applied under the room's lock, encoded once (plain and compressed), and
/// posted to the mailbox of every loop that has members of the room, in order. Each loop
/// then writes the same bytes to all of its members.
///
/// With an `engine` (Redis), the rooms here are this node's copies of shared rooms: changes
/// go to the engine, which orders them and brings them back (`SharedRoomsDelegate`) to be
/// fanned out the same way; while the engine is unavailable the hub serves its rooms alone.
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
        /// Presence goes out at most this often per room, and in large rooms at most once a
        /// second per 1,000 members (so presence costs at most 1,000 writes a second per
        /// room): the first change at once, later ones within the interval together at its
        /// end. 250 ms keeps small rooms current for people; in a room of 10,000 a join storm
        /// costs one presence broadcast every 10 s, not one per join.
        public var presenceIntervalMilliseconds = 250
        /// Rooms held at once; a request for a new room beyond it is refused (503).
        public var maxRooms = 10_000
        /// Members of one room; a request to join a full room is refused (503).
        public var maxMembersPerRoom = 16_384
        /// Rooms one address may create per minute (and at once); 0 is no limit. Over it: 429.
        public var roomCreationsPerMinute = 60
        /// Rooms one address may hold that no presenter has joined yet (a follower asked for
        /// them); 0 is no limit. Over it: 429. Such a room goes as soon as it is empty.
        public var unclaimedRoomsPerAddress = 50
        /// A room that nobody ever drove (no state, no document) is forgotten this soon after
        /// it empties: it holds nothing a returning presenter would miss but its key.
        public var undrivenIdleSeconds = 60
        /// Bytes of shared documents all rooms together may hold; 0 is no limit. A document
        /// beyond it is refused with `too_large`.
        public var documentsTotalBytes = 256 << 20
        /// What a room's state and document may hold (restored rooms are checked against it).
        public var messageLimits = ClientMessage.Limits()
        /// Wrong presenter keys one address may try per room and minute; past it: 429.
        /// 10 covers typos; key guessing gets 10 tries a minute instead of thousands a second.
        public var keyFailuresPerMinute = 10
        public init() {}
    }

    final class Room: @unchecked Sendable {
        struct Guarded {
            var core: RoomCore
            var locals: [LocalRoom?]
            var emptySince: UInt64?
            var compressingMembers = 0
            /// One more per document published here, so members get each document once.
            var documentVersion: UInt32 = 0
            /// Forgotten by the idle sweep; a join that finds it so starts over.
            var removed = false
            /// The address that created it, while no presenter has joined it (unclaimed).
            var creator: String?
            /// `seq` the store has written before it is used; with a store, a scroll that waits
            /// for it (a newer scroll replaces it).
            var seq = SeqReservation.unbounded
            var held: (message: ClientMessage, member: Unchecked<RoomMember>)?
            /// The held scroll's release is scheduled on its sender's loop (it takes the newest then).
            var releasing = false
            /// When presence goes out.
            var presenceThrottle: PresenceThrottle
            /// Shared rooms: fetched from the engine (joins wait until then), the last change
            /// version applied, other nodes' counts, this node's counts not yet announced,
            /// and the last state proposed here (the base for the next one's direction).
            var attached = true
            var waiting: [@Sendable () -> Void] = []
            var version = 0
            var remote: [String: (presence: Presence, at: UInt64)] = [:]
            var announce = false
            var proposed: ScrollState?

            /// Counts over every node.
            var presence: Presence {
                remote.values.reduce(core.presence) { $0.adding($1.presence) }
            }
            /// A fetch of the room's hash is on its way (after a change that could not follow),
            /// or due at the next tick (at most one a second per room).
            var resyncing = false
            var resyncDue = false
            var resyncedAt: UInt64?
        }

        let name: String
        let guarded: Mutex<Guarded>
        /// Compressor for shared frames; used only with the room locked.
        let deflater = Deflater(windowBits: 15, noContextTakeover: true)

        init(core: RoomCore, loops: Int, presenceIntervalMilliseconds: Int, attached: Bool = true) {
            name = core.name
            guarded = Mutex(Guarded(core: core, locals: Array(repeating: nil, count: loops),
                                    presenceThrottle: PresenceThrottle(intervalMilliseconds: presenceIntervalMilliseconds), attached: attached))
        }
    }

    /// `seq` is reserved in blocks this long (`SeqReservation`).
    static let seqBlock = SeqReservation.block

    public let options: Options
    public let counters = RoomCounters()
    let loops: [EventLoop]
    let rooms = Mutex<[String: Room]>([:])
    private let store: (any RoomStore)?
    let logger: Logger
    /// Shares rooms with other nodes (Redis), or nil for a single process.
    public let engine: (any RoomEngine)?
    let ticks = Atomic<Int>(0)
    let creationLimits: RoomCreationLimits
    let keyFailures: KeyFailureLimits
    let keyHasher = KeyHasher()
    /// Bytes of the documents all rooms hold now, against `options.documentsTotalBytes`.
    let documents: DocumentBudget

    /// Refusals by reason, for /metrics (shared with the server's other counters).
    let refusals: RefusalCounters

    /// - Parameter store: where rooms are kept across restarts; the rooms in it are
    ///   restored now (empty, so they expire after `roomIdleSeconds` unless someone joins).
    /// - Parameter engine: shares the rooms with other nodes; it runs on `loops[0]`.

    public init(loops: [EventLoop], options: Options = .init(), store: (any RoomStore)? = nil, engine: (any RoomEngine)? = nil,
                refusals: RefusalCounters = RefusalCounters(), logger: Logger = Logger(label: "scrollsync")) throws(StoreError) {
        self.loops = loops
        self.refusals = refusals
        self.options = options
        self.store = store
        self.engine = engine
        self.logger = logger
        creationLimits = RoomCreationLimits(perMinute: options.roomCreationsPerMinute, unclaimedPerAddress: options.unclaimedRoomsPerAddress)
        keyFailures = KeyFailureLimits(perMinute: options.keyFailuresPerMinute)
        documents = DocumentBudget(limit: options.documentsTotalBytes)
        // Restored rooms take at most half of the room and document limits, most recently
        // changed first: the other half is for rooms people create after the restart.
        let budget = RestoreBudget(rooms: max(1, options.maxRooms / 2), documentBytes: options.documentsTotalBytes / 2, limits: options.messageLimits)
        let restored = try store?.loadAll(within: budget) ?? []
        let now = loops.first?.now ?? 0
        rooms.withLock { rooms in
            for stored in restored {
                // Nothing above the stored ceiling was ever sent (files from before ceilings: a
                // block above their state); the restored state is shown one above it.
                let base = stored.seqCeiling > 0 ? max(stored.state?.seq ?? 0, stored.seqCeiling)
                                                 : (stored.state?.seq ?? 0) + (stored.state == nil ? 0 : Self.seqBlock - 1)
                var state = stored.state
                state?.seq = base + 1
                let core = RoomCore(name: stored.name, state: state, document: stored.document,
                                    presenterKey: stored.keyDigest.map { Array($0.utf8) }, locked: stored.locked, seqBase: base,
                                    followKey: stored.followKey)
                let room = Room(core: core, loops: loops.count, presenceIntervalMilliseconds: options.presenceIntervalMilliseconds)
                documents.restore(stored.document?.text.utf8.count ?? 0)
                room.guarded.withLock { guarded in
                    guarded.emptySince = now
                    guarded.seq = SeqReservation(written: base)
                    save(&guarded)  // asks for a block above the restored seq
                }
                rooms[stored.name] = room
            }
        }
        if !restored.isEmpty { logger.info("rooms restored", metadata: ["count": "\(restored.count)"]) }
        store?.written = { [weak self] name, ceiling in self?.seqWritten(room: name, ceiling: ceiling) }
        loops.first?.onTick { [weak self] in
            self?.forgetIdleRooms()
            self?.releaseHeldScrollsWhileStoreFails()
            if let now = self?.loops.first?.now {
                self?.creationLimits.sweep(now: now)
                self?.keyFailures.sweep(now: now)
            }
            self?.keepShared()
        }
        engine?.delegate = self
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
        /// The driver's display name, if it gave one.
        public var driverName: String?
        /// A follow key is needed to follow it (`GET /rooms` leaves it out).
        public var isPrivate: Bool
    }

    public func summaries() -> [RoomSummary] {
        let all = rooms.withLock { Array($0) }
        return all.map { name, room in
            room.guarded.withLock { guarded in
                let core = guarded.core
                let presence = guarded.presence
                return RoomSummary(name: name, presenters: presence.presenters, followers: presence.followers,
                                   detached: presence.detached, seq: core.state?.seq ?? 0, driving: core.driver != nil,
                                   document: core.document?.name, driverName: core.driverName, isPrivate: core.isPrivate)
            }
        }.sorted { $0.name < $1.name }
    }

    public func admission(room name: String, role: Role, address: String, followKey: String?, authorized: Bool) -> HTTPResponse? {
        if role == .presenter, let retryAfter = keyFailures.retryAfter(address: address, room: name, now: loops.first?.now ?? 0) {
            refusals.count(.keyLimit)
            return .error(429, "too many wrong presenter keys for room \(name) from \(address); try again in \(retryAfter) s",
                          headers: [("Retry-After", String(retryAfter))])
        }
        let (room, count) = rooms.withLock { ($0[name], $0.count) }
        guard let room else {
            if let (reason, retryAfter) = creationLimits.refusal(address: address, now: loops.first?.now ?? 0) {
                refusals.count(.roomCreations)
                return .error(429, reason, headers: [("Retry-After", String(retryAfter))])
            }
            guard count < options.maxRooms else {
                refusals.count(.roomLimit)
                return .error(503, "server at its room limit (\(options.maxRooms))", headers: [("Retry-After", "10")])
            }
            return nil
        }
        let (members, required) = room.guarded.withLock { ($0.core.members.count, $0.core.followKey) }
        if role == .follower, !authorized, let required,
           case .refused(let status, let reason)? = followKeyRefusal(name, required: required, given: followKey, address: address) {
            refusals.count(status == 429 ? .keyLimit : .followKey)
            return .error(status, reason, headers: status == 401 ? [("WWW-Authenticate", "FollowKey")] : [])
        }
        guard members < options.maxMembersPerRoom else {
            refusals.count(.roomLimit)
            return .error(503, "room \(name) is full (\(options.maxMembersPerRoom) members)", headers: [("Retry-After", "10")])
        }
        return nil
    }

    /// Rooms created by addresses (tests).
    var creationAddressesTracked: Int { creationLimits.addressesTracked }

    public func join(_ member: RoomMember, room name: String, role: Role, key: String?,
                     completion: @escaping (Result<RoomCore.Welcome, ProtocolError>) -> Void) {
        join(member, room: name, role: role, key: key, proof: nil, completion: completion)
    }

    /// A presenter key hashed against the room's record `against` (nil: a fresh salt, to bind
    /// it), and the ticket that counts the check against its address until it is settled.
    struct KeyProof: Sendable {
        let against: String?
        let record: String
        let ticket: KeyCheckTicket
    }

    func join(_ member: RoomMember, room name: String, role: Role, key: String?, proof: KeyProof?,
                      completion: @escaping (Result<RoomCore.Welcome, ProtocolError>) -> Void) {
        while true {
            let shared = engine?.isAvailable == true
            let found = rooms.withLock { rooms -> Result<(Room, Bool), ProtocolError> in
                if let room = rooms[name] { return .success((room, false)) }
                guard rooms.count < options.maxRooms else {
                    refusals.count(.roomLimit)
                    return .failure(ProtocolError(.rateLimited, "server at its room limit (\(options.maxRooms)); try again later"))
                }
                if let (reason, retryAfter) = creationLimits.create(address: member.address, claimed: role == .presenter, now: member.peer.channel.loop.now) {
                    refusals.count(.roomCreations)
                    return .failure(ProtocolError(.rateLimited, "\(reason); try again in \(retryAfter) s"))
                }
                let room = Room(core: RoomCore(name: name), loops: loops.count, presenceIntervalMilliseconds: options.presenceIntervalMilliseconds,
                                attached: !shared)
                room.guarded.withLock { guarded in
                    if role == .follower { guarded.creator = member.address }
                    if store != nil { guarded.seq = SeqReservation(written: 0) }  // its first seq waits for a written ceiling
                    guarded.emptySince = member.peer.channel.loop.now  // until a join succeeds
                }
                rooms[name] = room
                return .success((room, true))
            }
            guard case .success(let (room, created)) = found else {
                if case .failure(let refusal) = found { completion(.failure(refusal)) }
                return
            }
            if created {
                logger.info("room created", metadata: ["room": "\(name)"])
                if shared, let engine {
                    engine.attach(room: name) { [self] snapshot in attached(room, snapshot: snapshot) }
                }
            }
            // The retry is made only when the join has to wait (most joins do not).
            let outcome = join(member, room: room, name: name, role: role, key: key, proof: proof) { [self] in
                let loop = member.peer.channel.loop
                let waiting = Unchecked(member)
                let answer = Unchecked(completion)
                return { [self] in
                    loop.execute { [self] in
                        guard !waiting.value.left else { return }
                        join(waiting.value, room: name, role: role, key: key, proof: proof, completion: answer.value)
                    }
                }
            }
            switch outcome {
            case .removed:
                continue
            case .waiting:
                return
            case .done(let result):
                completion(result)
                return
            case .hash(let existing):
                checkKey(member, room: name, role: role, key: key, against: existing, completion: completion)
                return
            }
        }
    }

    private enum JoinOutcome {
        case done(Result<RoomCore.Welcome, ProtocolError>)
        /// The room is being fetched from the engine; the join is retried once it is.
        case waiting
        /// The room was forgotten meanwhile.
        case removed
        /// The presenter's key must first be hashed against the room's record (nil: none).
        case hash(against: String?)
    }

    /// The retry is queued in the same critical section that finds the room still being
    /// fetched: queued after it, a fetch finishing in between would never run it.
    private func join(_ member: RoomMember, room: Room, name: String, role: Role, key: String?, proof: KeyProof?,
                      retryWhenAttached makeRetry: () -> @Sendable () -> Void) -> JoinOutcome {
        let loop = member.peer.channel.loop
        let shared = engine?.isAvailable == true
        return room.guarded.withLock { guarded in
            guard !guarded.removed else { return .removed }
            guard guarded.attached else {
                guarded.waiting.append(makeRetry())
                return .waiting
            }
            let hadKey = guarded.core.hasPresenterKey
            let current = guarded.core.presenterKeyText
            // A presenter's key becomes its record, hashed against the room's current record
            // (not asked of a presenter a signed token admitted).
            let authorized = member.authorized
            var given = key
            if role == .presenter, !authorized, let key, !key.isEmpty, !guarded.core.isLocked {
                guard let proof, proof.against == current else { return .hash(against: current) }
                given = proof.record
            }
            // A follower's follow key, checked against the room's record (cheap: no PBKDF2).
            let followCheck: ((String) -> Bool)? = role == .follower ? member.followKey.map { key in { FollowKey.matches(key, record: $0) } } : nil
            switch guarded.core.join(member.id, role: role, name: member.name, key: given, keyRequired: options.requirePresenterKey,
                                     claimsControl: !shared, followKey: followCheck, authorized: authorized) {
            case .failure(let error):
                if error.code == .unauthorized, role == .presenter, hadKey, !guarded.core.isLocked {
                    keyFailed(room: name, address: member.address, ticket: proof?.ticket, now: loop.now)
                } else if error.code == .unauthorized, role == .follower, member.followKey != nil {
                    keyFailed(room: name, address: member.address, ticket: nil, now: loop.now)
                }
                if error.code == .unauthorized, role == .follower { refusals.count(.followKey) }
                proof?.ticket.settle(failed: false, now: loop.now)
                return .done(.failure(error))
            case .success(let (answer, broadcasts)):
                proof?.ticket.settle(failed: false, now: loop.now)
                var welcome = answer
                if role == .presenter, let creator = guarded.creator {
                    guarded.creator = nil  // claimed: no longer counted against the follower's address
                    creationLimits.settled(address: creator)
                }
                if let current, PresenterKey.isLegacy(current), let key, role == .presenter {
                    upgradeLegacyKey(key, from: current, room: room, loop: loop)
                }
                if !hadKey && guarded.core.hasPresenterKey {
                    save(&guarded)
                    if shared, let engine, let digest = guarded.core.presenterKeyText {
                        engine.bindKey(room: name, digest: digest) { kept in
                            room.guarded.withLock { $0.core.adopt(presenterKey: kept) }
                        }
                    }
                }
                if role == .presenter, let followKey = member.followKey {
                    setFollowKey(followKey, in: &guarded, room: room, shared: shared)
                }
                if shared, role == .presenter, guarded.core.driver == nil, let engine {
                    engine.control(room: name, .claim(session: member.id.description, name: member.name)) { _ in }
                }
                let local = guarded.locals[loop.index] ?? LocalRoom(loop: loop, conflation: options.conflation, counters: counters)
                guarded.locals[loop.index] = local
                local.add(member)
                member.roomHandle = room
                member.lastSeq = SeqMark(welcome.state?.seq ?? 0)
                member.lastDocument = guarded.documentVersion  // the welcome carries the current document
                if member.windowBits != nil { guarded.compressingMembers += 1 }
                guarded.emptySince = nil
                welcome.presence = guarded.presence
                publish(broadcasts, in: &guarded, room: room, loop: loop)
                return .done(.success(welcome))
            }
        }
    }

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
    private enum Sharing {
        /// Sent to the engine, which brings the change back to every node.
        case sent
        case refused(ProtocolError)
        /// A change this node keeps to itself (`follow`).
        case local
    }

    /// Sends a change to the engine, which orders it and brings it back to every node.
    private func share(_ message: ClientMessage, from sender: RoomMember, room: Room, engine: any RoomEngine) -> Sharing {
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
    private func receiveHere(_ message: ClientMessage, from member: RoomMember, room: Room) -> ProtocolError? {
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

    private func apply(_ message: ClientMessage, from member: RoomMember, in guarded: inout Room.Guarded, room: Room) -> ProtocolError? {
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

    /// Bytes of shared documents the rooms hold (for /metrics).
    public var documentBytesHeld: Int { documents.bytesHeld }

    /// The store wrote `ceiling` for room `name`: seq up to it may be used; a held scroll goes.
    private func seqWritten(room name: String, ceiling: Int) {
        guard let room = rooms.withLock({ $0[name] }) else { return }
        releaseHeldScroll(room) { guarded in
            guarded.seq.wrote(ceiling, lastSeq: guarded.core.lastSeq)
        }
    }

    /// Applies the room's held scroll when `ready` says so: on its sender's loop, where its
    /// member lives, taking the newest held scroll when it runs.
    private func releaseHeldScroll(_ room: Room, when ready: (inout Room.Guarded) -> Bool) {
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

    public func leave(_ member: RoomMember) {
        member.left = true
        guard let room = member.roomHandle as? Room else { return }
        let name = room.name
        member.roomHandle = nil
        let loop = member.peer.channel.loop
        let unclaimedAndEmpty = room.guarded.withLock { guarded in
            guarded.locals[loop.index]?.remove(member)
            if member.windowBits != nil { guarded.compressingMembers -= 1 }
            let drove = guarded.core.driver == member.id
            var broadcasts = guarded.core.leave(member.id)
            if guarded.core.isEmpty { guarded.emptySince = loop.now }
            if drove, let engine, engine.isAvailable {
                // The release comes back from the engine as a driver change for every node.
                broadcasts.removeAll { if case .driver = $0 { true } else { false } }
                engine.control(room: name, .release(session: member.id.description)) { _ in }
            }
            publish(broadcasts, in: &guarded, room: room, loop: loop)
            return guarded.creator != nil && guarded.core.isEmpty
        }
        if unclaimedAndEmpty { removeIfEmptyAndUnclaimed(room) }
    }

    /// An unclaimed room (only followers ever joined it) holds nothing worth keeping: it goes
    /// as soon as its last member leaves, so that it holds no slot of the room limit.
    private func removeIfEmptyAndUnclaimed(_ room: Room) {
        // The room table's lock before the room's, as everywhere.
        let creator = rooms.withLock { rooms -> String? in
            room.guarded.withLock { guarded -> String? in
                guard let creator = guarded.creator, guarded.core.isEmpty, !guarded.removed, guarded.waiting.isEmpty else { return nil }
                guarded.removed = true
                guarded.creator = nil
                if rooms[room.name] === room { rooms[room.name] = nil }
                return creator
            }
        }
        if let creator { creationLimits.settled(address: creator) }
    }

    /// Encodes each broadcast once and posts it to every loop with members.
    /// `loop` is the caller's loop, where a coalesced presence send is scheduled.
    func publish(_ broadcasts: [Broadcast], in guarded: inout Room.Guarded, room: Room, loop: EventLoop) {
        let deflater = guarded.compressingMembers > 0 ? room.deflater : nil
        for broadcast in broadcasts {
            let item: LocalRoom.Item
            switch broadcast {
            case .presence:
                guarded.announce = true
                presenceChanged(in: &guarded, room: room, loop: loop)
                continue
            case .state(let state):
                item = .state(seq: state.seq, BroadcastFrame(text: ServerMessage.state(state), deflater: deflater))
            case .driver(let id, let name):
                item = .reliable(BroadcastFrame(text: ServerMessage.driver(id?.description, name: name), deflater: deflater))
            case .document(let document):
                guarded.documentVersion &+= 1
                item = .document(version: guarded.documentVersion,
                                 BroadcastFrame(text: ServerMessage.document(document), deflater: deflater, replaceable: true))
            }
            for case let local? in guarded.locals { local.post(item) }
        }
    }

    /// Presence goes out as the room's `PresenceThrottle` says: now, or once at the end of
    /// the interval with the counts as they are then.
    func presenceChanged(in guarded: inout Room.Guarded, room: Room, loop: EventLoop) {
        switch guarded.presenceThrottle.changed(now: loop.now, members: guarded.core.members.count) {
        case .alreadyScheduled:
            break
        case .sendNow:
            sendPresence(in: &guarded, room: room, now: loop.now)
        case .sendAfter(let delay):
            loop.schedule(after: delay) { [self] in
                room.guarded.withLock { guarded in
                    guard !guarded.removed else { return }
                    sendPresence(in: &guarded, room: room, now: loop.now)
                }
            }
        }
    }

    private func sendPresence(in guarded: inout Room.Guarded, room: Room, now: UInt64) {
        guarded.presenceThrottle.sending(at: now)
        if guarded.announce, let engine, engine.isAvailable {
            engine.presence(room: guarded.core.name, counts: guarded.core.presence)
        }
        guarded.announce = false
        let deflater = guarded.compressingMembers > 0 ? room.deflater : nil
        let item = LocalRoom.Item.presence(BroadcastFrame(text: ServerMessage.presence(guarded.presence), deflater: deflater))
        for case let local? in guarded.locals { local.post(item) }
    }

    /// While the store cannot write (disk full), a room does not wait for it: held scrolls go
    /// out, and `seq` is kept only in memory until the store writes again (the failure is
    /// logged and shown in /healthz; a crash in that time may repeat `seq` numbers).
    private func releaseHeldScrollsWhileStoreFails() {
        guard let store, store.health.failing else { return }
        let all = rooms.withLock { Array($0.values) }
        for room in all { releaseHeldScroll(room) { _ in true } }
    }

    /// Queues the room for the store, with a `seq` ceiling a block ahead when half the last
    /// one is used.
    func save(_ guarded: inout Room.Guarded) {
        guard let store else { return }
        let core = guarded.core
        let ceiling = guarded.seq.ceiling(for: core.lastSeq)
        store.save(StoredRoom(name: core.name, state: core.state, document: core.document, keyDigest: core.presenterKeyText,
                              locked: core.isLocked, seqCeiling: ceiling, followKey: core.followKey))
    }

    private func forgetIdleRooms() {
        guard let now = loops.first?.now else { return }
        var forgotten = [(name: String, idleSeconds: Int, creator: String?)]()
        rooms.withLock { rooms in
            rooms = rooms.filter { name, room in
                room.guarded.withLock { guarded in
                    // A room nobody drove keeps nothing a returning presenter needs but its key.
                    let driven = guarded.core.state != nil || guarded.core.document != nil
                    let idleSeconds = driven ? options.roomIdleSeconds : min(options.roomIdleSeconds, options.undrivenIdleSeconds)
                    guard let since = guarded.emptySince,
                          elapsedNanoseconds(from: since, to: now) >= UInt64(idleSeconds) * 1_000_000_000 else { return true }
                    guarded.removed = true
                    documents.release(guarded.core.document?.text.utf8.count ?? 0)
                    forgotten.append((name, idleSeconds, guarded.creator))
                    guarded.creator = nil
                    return false
                }
            }
        }
        for (name, idleSeconds, creator) in forgotten {
            if let creator { creationLimits.settled(address: creator) }
            store?.remove(name)
            logger.info("room expired", metadata: ["room": "\(name)", "idleSeconds": "\(idleSeconds)"])
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
