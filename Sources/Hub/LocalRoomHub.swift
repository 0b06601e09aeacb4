package import Access
import HTTP1
import Deflate
import Logging
package import RoomKit
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
    /// What the hub enforces, each the setting named (`Settings.all`: its default and why);
    /// `LocalRoomHub.Options(configuration)` makes them.
    public struct Options: Sendable {
        public var requirePresenterKey: Bool  // rooms.requireKeys
        public var roomIdleSeconds: Int  // rooms.idleSeconds
        public var undrivenIdleSeconds: Int  // rooms.undrivenIdleSeconds
        public var conflation: Bool  // rooms.conflation
        public var recordRooms: Bool  // rooms.record
        public var maxRooms: Int  // limits.rooms: beyond it, 503
        public var maxMembersPerRoom: Int  // limits.membersPerRoom: beyond it, 503
        public var roomCreationsPerMinute: Int  // limits.roomCreationsPerMinute: beyond it, 429
        public var unclaimedRoomsPerAddress: Int  // limits.unclaimedRoomsPerAddress: beyond it, 429
        public var keyFailuresPerMinute: Int  // limits.keyFailuresPerMinute: beyond it, 429
        public var documentsTotalBytes: Int  // limits.documentsTotalBytes: beyond it, too_large
        /// What a room's state and document may hold (restored rooms are checked against it).
        public var messageLimits: ClientMessage.Limits
        public var recordingBytes: Int  // limits.recordingBytes
        public var recordingsTotalBytes: Int  // limits.recordingsTotalBytes
        public var recordingsBytesPerAddress: Int  // limits.recordingsBytesPerAddress
        /// Presence goes out at most this often per room, and in large rooms at most once a
        /// second per 1,000 members (so presence costs at most 1,000 writes a second per
        /// room): the first change at once, later ones within the interval together at its
        /// end. 250 ms keeps small rooms current for people; in a room of 10,000 a join storm
        /// costs one presence broadcast every 10 s, not one per join.
        public var presenceIntervalMilliseconds = 250
        /// Distinct terminal sizes a room renders for `/tty` readers (`SizeTable`).
        public var screenSizesPerRoom: Int  // limits.ttySizesPerRoom

        public init(requirePresenterKey: Bool, roomIdleSeconds: Int, undrivenIdleSeconds: Int, conflation: Bool, recordRooms: Bool,
                    maxRooms: Int, maxMembersPerRoom: Int, roomCreationsPerMinute: Int, unclaimedRoomsPerAddress: Int, keyFailuresPerMinute: Int,
                    documentsTotalBytes: Int, messageLimits: ClientMessage.Limits,
                    recordingBytes: Int, recordingsTotalBytes: Int, recordingsBytesPerAddress: Int, screenSizesPerRoom: Int) {
            (self.requirePresenterKey, self.roomIdleSeconds, self.undrivenIdleSeconds, self.conflation, self.recordRooms)
                = (requirePresenterKey, roomIdleSeconds, undrivenIdleSeconds, conflation, recordRooms)
            (self.maxRooms, self.maxMembersPerRoom, self.roomCreationsPerMinute, self.unclaimedRoomsPerAddress, self.keyFailuresPerMinute)
                = (maxRooms, maxMembersPerRoom, roomCreationsPerMinute, unclaimedRoomsPerAddress, keyFailuresPerMinute)
            (self.documentsTotalBytes, self.messageLimits) = (documentsTotalBytes, messageLimits)
            (self.recordingBytes, self.recordingsTotalBytes, self.recordingsBytesPerAddress) = (recordingBytes, recordingsTotalBytes, recordingsBytesPerAddress)
            self.screenSizesPerRoom = screenSizesPerRoom
        }
    }

    /// `seq` is reserved in blocks this long (`SeqReservation`).
    static let seqBlock = SeqReservation.block

    public let options: Options
    public let counters = RoomCounters()
    /// Renders rooms' terminal views off the loops (`/rooms/NAME/tty`).
    package let screenRenderer = ScreenRenderer()
    let loops: [EventLoop]
    let rooms = Mutex<[String: Room]>([:])
    let store: (any RoomStore)?
    let logger: Logger
    /// Shares rooms with other nodes (Redis), or nil for a single process.
    package let engine: (any RoomEngine)?
    let ticks = Atomic<Int>(0)
    /// What the engine tells the hub goes through it (`SharedRoomsBridge`).
    let sharedRooms = SharedRoomsBridge()
    let creationLimits: RoomCreationLimits
    /// Presenter keys' way in: limits per address and room, then the slow hash.
    package let keys: KeyAdmission
    /// Bytes of the documents all rooms hold now, against `options.documentsTotalBytes`.
    let documents: ByteBudget
    /// Bytes of the recordings all rooms hold now, against `options.recordingsTotalBytes`, and
    /// each address's share.
    package let recordingBytes: RecordingBudget
    /// Where recordings are kept across restarts (with the embedded store), or nil.
    package let recordingFiles: RecordingFiles?
    /// The server's URL (`ws://HOST:PORT`, the port it bound) for a recording's header; the
    /// server sets it once it listens.
    package let publicURL = Reloadable("ws://localhost")

    /// Refusals by reason, for /metrics (shared with the server's other counters).
    let refusals: RefusalCounters

    /// - Parameter store: where rooms are kept across restarts; the rooms in it are
    ///   restored now (empty, so they expire after `roomIdleSeconds` unless someone joins).
    /// - Parameter engine: shares the rooms with other nodes; it runs on `loops[0]`.

    /// - Parameter recordingsDirectory: where rooms' recordings are kept across restarts (nil: in memory).
    package init(loops: [EventLoop], options: Options, store: (any RoomStore)? = nil, engine: (any RoomEngine)? = nil,
                recordingsDirectory: String? = nil,
                refusals: RefusalCounters = RefusalCounters(), logger: Logger = Logger(label: "scrollsync")) throws(StoreError) {
        self.loops = loops
        self.refusals = refusals
        self.options = options
        self.store = store
        self.engine = engine
        self.logger = logger
        creationLimits = RoomCreationLimits(perMinute: options.roomCreationsPerMinute, unclaimedPerAddress: options.unclaimedRoomsPerAddress)
        keys = KeyAdmission(failuresPerMinute: options.keyFailuresPerMinute)
        documents = ByteBudget(limit: options.documentsTotalBytes)
        recordingBytes = RecordingBudget(limit: options.recordingsTotalBytes, perAddress: options.recordingsBytesPerAddress)
        recordingFiles = try recordingsDirectory.map { directory throws(StoreError) in try RecordingFiles(directory: directory, logger: logger) }
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
                let room = Room(core: core, seq: SeqReservation(written: base), loops: loops.count, presenceIntervalMilliseconds: options.presenceIntervalMilliseconds)
                documents.count(stored.document?.text.utf8.count ?? 0)
                room.guarded.withLock { guarded in
                    guarded.emptySince = now
                    save(&guarded)  // asks for a block above the restored seq
                    restoreRecording(in: &guarded, room: stored.name, now: now)
                }
                rooms[stored.name] = room
            }
        }
        if !restored.isEmpty { logger.info("rooms restored", metadata: ["count": "\(restored.count)"]) }
        recordingFiles?.removeAll(except: Set(restored.map(\.name)))
        store?.written = { [weak self] name, ceiling in self?.seqWritten(room: name, ceiling: ceiling) }
        loops.first?.onTick { [weak self] in
            self?.forgetIdleRooms()
            self?.releaseHeldScrollsWhileStoreFails()
            if let now = self?.loops.first?.now {
                self?.creationLimits.sweep(now: now)
                self?.keys.failures.sweep(now: now)
            }
            self?.keepShared()
            self?.forgetDroppedRecordings()
        }
        sharedRooms.hub = self
        engine?.delegate = sharedRooms
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
        if role == .presenter, let retryAfter = keys.failures.retryAfter(address: address, room: name, now: loops.first?.now ?? 0) {
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

    /// Bytes of shared documents the rooms hold (for /metrics).
    public var documentBytesHeld: Int { documents.bytesHeld }

    public func leave(_ member: RoomMember) {
        member.left = true
        guard let room = member.roomHandle as? Room else { return }
        member.roomHandle = nil
        let loop = member.peer.channel.loop
        withRoom(room, on: loop) { guarded, steps in
            if member.peer.screenSize == nil {
                guarded.locals[loop.index]?.remove(member)
            } else if let readers = guarded.screens, removeScreenReader(member, from: readers, loop: loop) {
                guarded.screens = nil
            }
            if member.windowBits != nil { guarded.compressingMembers -= 1 }
            step(.leave(member.id), in: &guarded, &steps)  // an unclaimed room goes with its last member (`.forgetUnclaimed`)
            notePresenters(&guarded)
            if guarded.core.isEmpty { guarded.emptySince = loop.now }
        }
    }

    /// An unclaimed room (only followers ever joined it) holds nothing worth keeping: it goes
    /// as soon as its last member leaves, so that it holds no slot of the room limit.
    func removeIfEmptyAndUnclaimed(_ room: Room, on loop: EventLoop) {
        // The room table's lock before the room's, as everywhere.
        rooms.withLock { rooms in
            room.guarded.withLock { guarded in
                guard guarded.machine.creator != nil, guarded.core.isEmpty, !guarded.removed, guarded.waiting.isEmpty,
                      guarded.joinsAfterClaim.isEmpty else { return }
                guarded.removed = true
                dropRecording(in: &guarded, room: room.name)
                var steps = Steps(room: room, loop: loop, member: nil)
                step(.forgotten, in: &guarded, &steps)  // its creator's address holds it no more
                if rooms[room.name] === room { rooms[room.name] = nil }
                // Under the room table's lock: a room of the same name made after this attaches after it.
                engine?.detach(room: room.name)
            }
        }
    }

    /// Encodes a broadcast once and posts it to every loop with members.
    /// `loop` is the caller's loop, where a coalesced presence send is scheduled.
    /// Returns the encoded message when it is a `state`.
    @discardableResult
    func publish(_ broadcast: Broadcast, in guarded: inout Room.Guarded, room: Room, loop: EventLoop) -> [UInt8]? {
        var stateText: [UInt8]?
        let deflater = guarded.compressingMembers > 0 ? room.deflater : nil
        let item: LocalRoom.Item
        switch broadcast {
        case .presence:
            guarded.announce = true
            presenceChanged(in: &guarded, room: room, loop: loop)
            return nil
        case .state(let state):
            let text = ServerMessage.state(state)
            stateText = text
            record(text, in: &guarded, room: room, now: loop.now)
            item = .state(seq: state.seq, BroadcastFrame(text: text, deflater: deflater))
        case .driver(let id, let name):
            let text = ServerMessage.driver(id?.description, name: name)
            record(text, in: &guarded, room: room, now: loop.now, driver: true)
            item = .reliable(BroadcastFrame(text: text, deflater: deflater))
        case .document(let document):
            guarded.documentVersion &+= 1
            let text = ServerMessage.document(document)
            record(text, in: &guarded, room: room, now: loop.now)
            item = .document(version: guarded.documentVersion, BroadcastFrame(text: text, deflater: deflater, replaceable: true))
        }
        for case let local? in guarded.locals { local.post(item) }
        postToScreens(broadcast, in: &guarded)
        return stateText
    }

    /// Presence goes out as the room's `PresenceThrottle` says: now, or once at the end of
    /// the interval with the counts as they are then.
    func presenceChanged(in guarded: inout Room.Guarded, room: Room, loop: EventLoop) {
        notePresenters(&guarded)
        switch guarded.presenceThrottle.changed(now: loop.now, members: guarded.core.members.count) {
        case .alreadyScheduled:
            break
        case .sendNow:
            sendPresence(in: &guarded, room: room, now: loop.now)
        case .sendAfter(let delay):
            schedulePresence(after: delay, room: room, loop: loop)
        }
    }

    /// The scheduled presence send: it goes when due by the room's size then (a room that grew
    /// meanwhile waits longer, so a pass to every member still comes at most once per
    /// millisecond per member: a join storm does not send each member a count it outgrew).
    private func schedulePresence(after delay: UInt64, room: Room, loop: EventLoop) {
        loop.schedule(after: delay) { [self] in
            room.guarded.withLock { guarded in
                guard !guarded.removed else { return }
                if let wait = guarded.presenceThrottle.waitLeft(now: loop.now, members: guarded.core.members.count) {
                    return schedulePresence(after: wait, room: room, loop: loop)
                }
                sendPresence(in: &guarded, room: room, now: loop.now)
            }
        }
    }

    func sendPresence(in guarded: inout Room.Guarded, room: Room, now: UInt64) {
        guarded.presenceThrottle.sending(at: now)
        if guarded.announce, let engine, engine.isAvailable {
            engine.presence(room: guarded.core.name, counts: guarded.core.presence)
        }
        guarded.announce = false
        let deflater = guarded.compressingMembers > 0 ? room.deflater : nil
        let item = LocalRoom.Item.presence(BroadcastFrame(text: ServerMessage.presence(guarded.presence), deflater: deflater))
        for case let local? in guarded.locals { local.post(item) }
        postToScreens(.presence(guarded.presence), in: &guarded)
    }

    /// Queues the room for the store, with a `seq` ceiling a block ahead when half the last
    /// one is used.
    func save(_ guarded: inout Room.Guarded) {
        guard let store else { return }
        let core = guarded.core
        let ceiling = guarded.machine.seq.ceiling(for: core.lastSeq)
        store.save(StoredRoom(name: core.name, state: core.state, document: core.document, keyDigest: core.presenterKeyText,
                              locked: core.isLocked, seqCeiling: ceiling, followKey: core.followKey))
    }

    func forgetIdleRooms() {
        guard let now = loops.first?.now else { return }
        var forgotten = [(name: String, idleSeconds: Int)]()
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
                    dropRecording(in: &guarded, room: name)
                    forgotten.append((name, idleSeconds))
                    var steps = Steps(room: room, loop: loops[0], member: nil)
                    step(.forgotten, in: &guarded, &steps)  // its creator's address holds it no more
                    engine?.detach(room: name)
                    return false
                }
            }
        }
        for (name, idleSeconds) in forgotten {
            store?.remove(name)
            logger.info("room expired", metadata: ["room": "\(name)", "idleSeconds": "\(idleSeconds)"])
        }
    }
}
