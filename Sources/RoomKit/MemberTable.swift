import ScrollModel

/// A room's members by session id, kept small: every member of every room has an entry.
///
/// An open-addressing table with linear probing, at most 7/8 full, of 9 bytes a slot (the
/// id and a one-byte tag). `Dictionary` keeps 10 bytes a slot at most 3/4 full, so a room
/// of 100 members took 256 slots (2.6 KiB); here it takes 128 (1.2 KiB). Removal shifts
/// later entries back instead of leaving tombstones, and a table under 1/8 full halves.
public struct MemberTable: Sendable {
    private var ids: [UInt64] = []
    /// 0 for an empty slot; else `Self.occupied` with the member's role and following bits.
    private var tags: [UInt8] = []
    public private(set) var count = 0

    private static let occupied: UInt8 = 1
    private static let presenter: UInt8 = 2
    private static let following: UInt8 = 4
    /// The smallest table with slots (a power of two, as every size is).
    private static let minimumSlots = 8

    public init() {}

    public var isEmpty: Bool { count == 0 }

    /// The member with `id`, if any; assigning nil removes it.
    public subscript(id: SessionID) -> RoomCore.Member? {
        get { index(of: id.value).map { Self.member(tags[$0]) } }
        set {
            if let newValue { insert(id.value, Self.tag(newValue)) } else { remove(id.value) }
        }
    }

    /// Removes the member with `id`; returns it if it was there.
    @discardableResult
    public mutating func removeValue(forKey id: SessionID) -> RoomCore.Member? {
        remove(id.value).map(Self.member)
    }

    /// The id of some member that satisfies `predicate` (in no particular order).
    public func firstID(where predicate: (RoomCore.Member) -> Bool) -> SessionID? {
        for slot in tags.indices where tags[slot] != 0 && predicate(Self.member(tags[slot])) {
            return SessionID(ids[slot])
        }
        return nil
    }

    // MARK: Slots

    private static func tag(_ member: RoomCore.Member) -> UInt8 {
        occupied | (member.role == .presenter ? presenter : 0) | (member.following ? following : 0)
    }

    private static func member(_ tag: UInt8) -> RoomCore.Member {
        RoomCore.Member(role: tag & presenter != 0 ? .presenter : .follower, following: tag & following != 0)
    }

    /// Where the probe for `id` starts. Ids from other nodes are parsed from the wire, so
    /// they are mixed (Fibonacci hashing) rather than trusted to be spread.
    private func home(_ id: UInt64) -> Int {
        Int(truncatingIfNeeded: (id &* 0x9E37_79B9_7F4A_7C15) >> 32) & (tags.count - 1)
    }

    private func index(of id: UInt64) -> Int? {
        guard count > 0 else { return nil }
        let mask = tags.count - 1
        var slot = home(id)
        while tags[slot] != 0 {
            if ids[slot] == id { return slot }
            slot = (slot + 1) & mask
        }
        return nil
    }

    private mutating func insert(_ id: UInt64, _ tag: UInt8) {
        if let slot = index(of: id) {
            tags[slot] = tag
            return
        }
        if (count + 1) * 8 > tags.count * 7 { resize(to: max(Self.minimumSlots, tags.count * 2)) }
        place(id, tag)
        count += 1
    }

    /// Puts an entry known to be absent in the first free slot of its probe.
    private mutating func place(_ id: UInt64, _ tag: UInt8) {
        let mask = tags.count - 1
        var slot = home(id)
        while tags[slot] != 0 { slot = (slot + 1) & mask }
        ids[slot] = id
        tags[slot] = tag
    }

    /// Removes `id`'s entry; returns its tag if it was there.
    @discardableResult
    private mutating func remove(_ id: UInt64) -> UInt8? {
        guard var hole = index(of: id) else { return nil }
        let removed = tags[hole]
        tags[hole] = 0
        count -= 1
        // Shift back each later entry of the run whose probe passes the hole, so that no
        // lookup stops early at it.
        let mask = tags.count - 1
        var next = (hole + 1) & mask
        while tags[next] != 0 {
            if (next - home(ids[next])) & mask >= (next - hole) & mask {
                ids[hole] = ids[next]
                tags[hole] = tags[next]
                tags[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
        if count == 0 {
            ids = []
            tags = []
        } else if tags.count > Self.minimumSlots && count * 8 < tags.count {
            resize(to: tags.count / 2)
        }
        return removed
    }

    private mutating func resize(to slots: Int) {
        let oldIDs = ids
        let oldTags = tags
        ids = Array(repeating: 0, count: slots)
        tags = Array(repeating: 0, count: slots)
        for slot in oldTags.indices where oldTags[slot] != 0 { place(oldIDs[slot], oldTags[slot]) }
    }
}
