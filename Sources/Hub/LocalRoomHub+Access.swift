package import Access
import Logging
import ScrollModel
import Synchronization
import Transport
import WebSocketCore

/// Who may present and who may follow: presenter keys checked by a slow hash off the loops
/// (counted against the address, also on other nodes, before they are checked), follow keys
/// of private rooms (a cheap salted hash per join), and what a private room shows to whom.
extension LocalRoomHub {
    /// What `GET /rooms/NAME/document` may answer.
    public enum DocumentAccess: Sendable {
        case document(SharedDocument)
        /// No such room, or no document in it.
        case none
        /// The room is private: `followKey` was missing (401) or wrong (403).
        case refused(status: Int, reason: String)
    }

    /// The document room `name` shares now, for someone who gives `followKey` (or a token
    /// that `authorized` them); a private room's only with its follow key. A room that is not
    /// there answers as a private one does (checked against a record no key matches): rooms
    /// left out of `GET /rooms` are not revealed here either.
    public func document(ofRoom name: String, followKey: String? = nil, authorized: Bool = false, address: String = "") -> DocumentAccess {
        let room = rooms.withLock { $0[name] }
        let (document, required) = room?.guarded.withLock { ($0.core.document, $0.core.followKey) } ?? (nil, FollowKey.decoy)
        if let required, !authorized {
            if case .refused(let status, let reason)? = followKeyRefusal(name, required: required, given: followKey, address: address) {
                return .refused(status: status, reason: status == 401 ? Self.hiddenRoom(name) : reason)
            }
        }
        return document.map { .document($0) } ?? .none
    }

    /// What a private room, and a room that is not there, answer to a request without a key.
    static func hiddenRoom(_ name: String) -> String {
        "room \(name) is private or not there: a private room's follow key (followKey=…) opens it"
    }

    /// Why `given` does not open private room `name` (401 missing, 403 wrong, 429 after too
    /// many wrong ones from `address`), or nil when it does. Wrong keys count as wrong
    /// presenter keys do.
    func followKeyRefusal(_ name: String, required: String, given: String?, address: String) -> DocumentAccess? {
        let now = loops.first?.now ?? 0
        if let retryAfter = keys.failures.retryAfter(address: address, room: name, now: now) {
            return .refused(status: 429, reason: "too many wrong keys for room \(name) from \(address); try again in \(retryAfter) s")
        }
        guard let given, !given.isEmpty else {
            return .refused(status: 401, reason: "room \(name) is private: follow it with its follow key (followKey=…)")
        }
        guard FollowKey.matches(given, record: required) else {
            counters.presenterKeyFailures.add(1, ordering: .relaxed)
            keys.failures.failed(address: address, room: name, now: now)
            logger.warning("follow key refused", metadata: ["room": "\(name)", "address": "\(address)"])
            return .refused(status: 403, reason: "wrong follow key for room \(name)")
        }
        return nil
    }

    /// Checks a presenter's key against the room's record (`KeyAdmission`: counted against
    /// the address first, then a slow hash off this loop), then joins again with the proof.
    /// `afterClaim`: the join waited for its claim of control (a key another node bound first
    /// is checked now); if it ends here (the presenter left, or the check was refused), a lease
    /// the claim won goes back (`abandonJoin`).
    func checkKey(_ member: RoomMember, room name: String, role: Role, key: String?, against existing: String?, afterClaim: Bool) {
        let waiting = Unchecked(member)
        keys.check(key ?? "", against: existing, room: name, address: member.address, engine: engine, on: member.peer.channel.loop,
                   wanted: { !waiting.value.left }) { [self] outcome in
            let refusal: ProtocolError
            switch outcome {
            case .checked(let record, let ticket) where !waiting.value.left:
                join(waiting.value, room: name, role: role, key: key, proof: KeyProof(against: existing, record: record, ticket: ticket),
                     afterClaim: afterClaim)
                return
            case .checked, .unwanted:
                if afterClaim { abandonJoin(waiting.value, room: name) }
                return
            case .limited(let seconds):
                counters.presenterKeyChecksRefused.add(1, ordering: .relaxed)
                refusals.count(.keyLimit)
                refusal = ProtocolError(.rateLimited, "too many presenter keys tried for room \(name) from \(waiting.value.address); try again in \(seconds) s")
            case .busy:
                refusal = ProtocolError(.rateLimited, "server busy checking presenter keys; try again in a moment")
            }
            if afterClaim { abandonJoin(waiting.value, room: name) }
            waiting.value.joined(.failure(refusal))
        }
    }

    func evictFollowers(in guarded: inout Room.Guarded, room: Room) {
        let reason = "room \(room.name) is now private: follow it again with its follow key (followKey=…)"
        for case let local? in guarded.locals { local.post(.evict(presenters: false, reason: reason)) }
        guarded.screens?.closeAll(reason: reason)
        logger.info("room made private", metadata: ["room": "\(room.name)"])
    }

    /// The room's presenter key record changed (another node's won, or a merge put it back):
    /// its presenters here proved another record, or none, so they go (closed 1008) and may
    /// present again with the room's key; those a signed token admitted stay.
    func evictPresenters(in guarded: inout Room.Guarded, room: Room) {
        let reason = "room \(room.name) has another presenter key: present it again with its key (key=…)"
        for case let local? in guarded.locals { local.post(.evict(presenters: true, reason: reason)) }
        logger.warning("presenters evicted: the room's presenter key changed", metadata: ["room": "\(room.name)"])
    }

    /// A record from an older server is replaced by a slow hash once its key is known good.
    func upgradeLegacyKey(_ key: String, from legacy: String, room: Room, loop: EventLoop) {
        _ = keys.hasher.hash(key, matching: nil, room: room.name, from: "", on: loop) { [self] record in
            step(.keyUpgraded(from: legacy, to: record), in: room, on: loop)
        }
    }

    /// A presenter gave a wrong key: counted, logged (never the key), and limited per
    /// address and room (`admission` answers 429 past the limit).
    func keyFailed(room name: String, address: String, ticket: KeyCheckTicket?, now: UInt64) {
        counters.presenterKeyFailures.add(1, ordering: .relaxed)
        if let ticket { ticket.settle(failed: true, now: now) } else { keys.failures.failed(address: address, room: name, now: now) }
        logger.warning("presenter key refused", metadata: ["room": "\(name)", "address": "\(address)"])
    }
}
