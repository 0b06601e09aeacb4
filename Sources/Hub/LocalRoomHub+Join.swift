package import Access
import Logging
package import RoomKit
import ScrollModel
import Synchronization
import Transport
import WebSocketCore

/// Joining a room: finding or creating it (within the room and creation limits), waiting
/// while a shared room is fetched, checking presenter and follow keys, and adding the member
/// to its loop's share of the room.
extension LocalRoomHub {
    public func join(_ member: RoomMember, room name: String, role: Role, key: String?) {
        join(member, room: name, role: role, key: key, proof: nil)
    }

    /// A presenter key hashed against the room's record `against` (nil: a fresh salt, to bind
    /// it), and the ticket that counts the check against its address until it is settled.
    struct KeyProof: Sendable {
        let against: String?
        let record: String
        let ticket: KeyCheckTicket
    }

    /// `afterClaim`: the join waited for its claim of control (`RoomMachine.JoinRequest.afterClaim`).
    func join(_ member: RoomMember, room name: String, role: Role, key: String?, proof: KeyProof?, afterClaim: Bool = false) {
        while true {
            let shared = engine?.isAvailable == true
            let found = rooms.withLock { rooms -> Result<(Room, Bool), ProtocolError> in
                if let room = rooms[name] { return .success((room, false)) }
                let now = member.peer.channel.loop.now
                let creation = RoomCreation.decide(role: role, address: member.address, roomsHeld: rooms.count, maxRooms: options.maxRooms) {
                    claimed in creationLimits.create(address: member.address, claimed: claimed, now: now)
                }
                guard case .create(let unclaimedBy) = creation else {
                    guard case .refused(let error, let limit) = creation else { return .failure(ProtocolError(.rateLimited, "not created")) }
                    refusals.count(limit == .rooms ? .roomLimit : .roomCreations)
                    return .failure(error)
                }
                // With a store, its first seq waits for a written ceiling.
                let room = Room(core: RoomCore(name: name), seq: store != nil ? SeqReservation(written: 0) : .unbounded, unclaimedBy: unclaimedBy,
                                loops: loops.count, presenceIntervalMilliseconds: options.presenceIntervalMilliseconds, attached: !shared)
                room.guarded.withLock { $0.emptySince = now }  // until a join succeeds
                rooms[name] = room
                return .success((room, true))
            }
            guard case .success(let (room, created)) = found else {
                if case .failure(let refusal) = found { member.joined(.failure(refusal)) }
                return
            }
            if created {
                logger.info("room created", metadata: ["room": "\(name)"])
                if shared, let engine {
                    engine.attach(room: name) { [self] snapshot in attached(room, snapshot: snapshot) }
                } else if engine?.isAvailable == true {
                    // The engine came up as this room was made here alone, perhaps after it
                    // reconciled the rooms it knew: this one goes through it now.
                    reconcile(room, name: name, on: member.peer.channel.loop)
                }
            }
            // The retry is made only when the join has to wait (most joins do not).
            let outcome = join(member, room: room, name: name, role: role, key: key, proof: proof, afterClaim: afterClaim) { [self] in
                let loop = member.peer.channel.loop
                let waiting = Unchecked(member)
                return { [self] in
                    loop.execute { [self] in
                        guard !waiting.value.left else { return }
                        join(waiting.value, room: name, role: role, key: key, proof: proof)
                    }
                }
            }
            switch outcome {
            case .removed:
                continue
            case .waiting:
                return
            case .done(let result):
                member.joined(result)
                return
            case .hash(let existing):
                checkKey(member, room: name, role: role, key: key, against: existing, afterClaim: afterClaim)
                return
            }
        }
    }

    enum JoinOutcome {
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
    func join(_ member: RoomMember, room: Room, name: String, role: Role, key: String?, proof: KeyProof?, afterClaim: Bool,
                      retryWhenAttached makeRetry: () -> @Sendable () -> Void) -> JoinOutcome {
        withRoom(room, on: member.peer.channel.loop) { guarded, steps -> JoinOutcome in
            guard !guarded.removed else { return .removed }
            guard guarded.attached else {
                guarded.waiting.append(makeRetry())
                return .waiting
            }
            return join(Unchecked(member), in: &guarded, &steps, name: name, role: role, key: key, proof: proof, afterClaim: afterClaim)
        }.value
    }

    /// The join again once its claim of control has its outcome here (`.continueJoin`); a
    /// member who left meanwhile leaves the room instead (a claim it won is given back).
    private func joinAfterClaim(_ joining: Unchecked<RoomMember>, room: Room, name: String, role: Role, key: String?,
                                proof: KeyProof?) -> @Sendable () -> Void {
        let loop = joining.value.peer.channel.loop
        return { [self] in
            loop.execute { [self] in
                let member = joining.value
                guard !member.left else { return abandonJoin(member, room: room) }
                join(member, room: name, role: role, key: key, proof: proof, afterClaim: true)
            }
        }
    }

    /// A presenter whose join waited for its claim of control does not join after all (it
    /// left, or its key check after the claim was refused): the room hears it leave, so a
    /// lease its claim won, or may have won, goes back now rather than when it expires (5 s).
    func abandonJoin(_ member: RoomMember, room name: String) {
        guard let room = rooms.withLock({ $0[name] }) else { return }
        abandonJoin(member, room: room)
    }

    private func abandonJoin(_ member: RoomMember, room: Room) {
        step(.leave(member.id), in: room, on: member.peer.channel.loop)
    }

    /// The join under the room's lock: the room's machine decides (the key's proof, who claims
    /// the room, whether it is recorded), the member is added to its loop's share of the room,
    /// then the room's effects are carried out (its broadcasts reach the member too).
    private func join(_ joining: Unchecked<RoomMember>, in guarded: inout Room.Guarded, _ steps: inout Steps, name: String, role: Role,
                      key: String?, proof: KeyProof?, afterClaim: Bool) -> JoinOutcome {
        let member = joining.value
        let room = steps.room
        let loop = member.peer.channel.loop
        // The key goes to the machine as the record it made, never itself.
        let given: GivenKey = proof.map { .hashed(record: $0.record, against: $0.against) } ?? (key?.isEmpty == false ? .unhashed : .absent)
        // A follower's follow key, checked against the room's record (cheap: no PBKDF2).
        var followCheck: (@Sendable (String) -> Bool)?
        if role == .follower, let followKey = member.followKey {
            followCheck = { record in FollowKey.matches(followKey, record: record) }
        }
        // A presenter's follow key (to make the room private): its record, with a fresh salt.
        let newFollowKey = role == .presenter ? member.followKey.map { key in
            Room.Machine.NewFollowKey(record: FollowKey.record(key, matching: nil)) { FollowKey.matches(key, record: $0) }
        } : nil
        let request = Room.Machine.JoinRequest(id: member.id, role: role, name: member.name, key: given, followKey: followCheck,
                                               authorized: member.authorized, keyRequired: options.requirePresenterKey, newFollowKey: newFollowKey,
                                               address: member.address, asksToRecord: member.asksToRecord, recordsEveryRoom: options.recordRooms,
                                               afterClaim: afterClaim)
        let effects = guarded.machine.step(join: request, machineContext)  // carried out once the member is in (below)
        if case .hashKey(let against)? = effects.first { return .hash(against: against) }
        if let ticket = effects.lazy.compactMap({ if case .orderControl(.claim, let ticket) = $0 { ticket } else { nil } }).first {
            // A shared room nobody drives: the join waits for its claim's outcome.
            guarded.joinsAfterClaim[ticket] = joinAfterClaim(joining, room: room, name: name, role: role, key: key, proof: proof)
            carryOut(effects, in: &guarded, &steps)
            return .waiting
        }
        // The key check is settled: a failure just counted (`keyFailed`) stays one.
        defer { proof?.ticket.settle(failed: false, now: loop.now) }
        guard case .welcome(let welcome)? = effects.first else {
            guard case .joinRefused(let error, let wrongKey)? = effects.first else { return .done(.failure(ProtocolError(.badMessage, "not joined"))) }
            if wrongKey {
                // A presenter's ticket counts it; a follower's wrong follow key counts against its address.
                keyFailed(room: name, address: member.address, ticket: role == .presenter ? proof?.ticket : nil, now: loop.now)
            }
            if error.code == .unauthorized, role == .follower { refusals.count(.followKey) }
            carryOut(effects, in: &guarded, &steps)  // a claim it won goes back (`releaseControl`)
            return .done(.failure(error))
        }
        for case .upgradeKey(let legacy) in effects { if let key { upgradeLegacyKey(key, from: legacy, room: room, loop: loop) } }
        if let wanted = member.peer.screenSize {
            addScreenReader(member, wanted: wanted, in: &guarded, room: room, loop: loop)
        } else {
            let local = guarded.locals[loop.index] ?? LocalRoom(loop: loop, conflation: options.conflation, counters: counters)
            guarded.locals[loop.index] = local
            local.add(member)
            member.lastSeq = local.mark(welcome.state?.seq ?? 0)
        }
        member.roomHandle = room
        member.lastDocument = guarded.documentVersion  // the welcome carries the current document
        if member.windowBits != nil { guarded.compressingMembers += 1 }
        guarded.emptySince = nil
        var welcomed = welcome.counting(guarded.presence)  // the counts of every node's members
        // The room's own effects (its recording, its broadcasts, the record to keep) once the member is in.
        carryOut(effects, in: &guarded, &steps)
        notePresenters(&guarded)
        if role == .presenter, let note = recordingNote(guarded, asked: steps.recordingAsked, problem: steps.recordingProblem) {
            welcomed = welcomed.noting(recording: note.state, problem: note.problem)
        }
        return .done(.success(welcomed))
    }
}
