import ScrollModel

/// A presenter key as a join gives it to the room's machine: never the key itself (the hub
/// holds that, and hashes it off the loop), only whether there is one and the record it made.
package enum GivenKey: Sendable, Equatable, ExpressibleByNilLiteral {
    /// No presenter key (or an empty one).
    case absent
    /// A key the hub has not hashed yet: the machine answers `.hashKey(against:)`.
    case unhashed
    /// The record the key made, hashed against the room's record `against` (nil: with a fresh
    /// salt, to bind it). Taken only while the room still holds `against`.
    case hashed(record: String, against: String?)

    package init(nilLiteral: ()) { self = .absent }
}

/// Whether a join may create the room it names, and who holds it unclaimed if so: the rules
/// around the node's room table (the table and its per-address counts are the hub's).
package enum RoomCreation: Equatable, Sendable {
    /// Create it; a follower's room is unclaimed (counted against its address) until a
    /// presenter joins it, here or on another node (`RoomMachine.creator`).
    case create(unclaimedBy: String?)
    /// Refused (`rate_limited`), at the node's room limit or the address's creation limit.
    case refused(ProtocolError, Limit)

    package enum Limit: Sendable { case rooms, creations }

    /// Decides a creation by `role` from `address` on a node holding `roomsHeld` rooms of at
    /// most `maxRooms`. `count` asks the address's limits and counts the creation if they
    /// allow it (`claimed`: a presenter's room is never unclaimed); it answers why not and
    /// the seconds to wait. The room limit is checked first: a refused join counts nothing.
    package static func decide(role: Role, address: String, roomsHeld: Int, maxRooms: Int,
                               count: (_ claimed: Bool) -> (reason: String, retryAfter: Int)?) -> RoomCreation {
        guard roomsHeld < maxRooms else {
            return .refused(ProtocolError(.rateLimited, "server at its room limit (\(maxRooms)); try again later"), .rooms)
        }
        if let (reason, retryAfter) = count(role == .presenter) {
            return .refused(ProtocolError(.rateLimited, "\(reason); try again in \(retryAfter) s"), .creations)
        }
        return .create(unclaimedBy: role == .follower ? address : nil)
    }
}
