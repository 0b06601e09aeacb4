import ScrollModel

/// The room's keys as they change after a join: a follow key a presenter gives, the presenter
/// key record the engine keeps, an older record hashed again.
extension RoomMachine {
    /// A presenter gave a follow key: the room becomes private with it (or takes the new one).
    /// Followers already in it joined without it: they go (closed 1008) and may follow again
    /// with the key. The same key again changes nothing.
    mutating func setFollowKey(_ key: NewFollowKey, shared: Bool) -> [Effect] {
        if let current = core.followKey, key.matches(current) { return [] }
        core.adopt(followKey: key.record)
        return shared ? [.save, .publishFollowKey(key.record), .evictFollowers] : [.save, .evictFollowers]
    }

    /// The engine keeps the first presenter key record any node bound; every node takes that
    /// one. A follow key given with this node's record is set only if that record won.
    /// A presenter here who joined with another record (it lost the binding race) goes.
    mutating func keyBound(kept: String?, digest: String, _ context: Context) -> [Effect] {
        let changed = core.presenterKeyText != kept
        core.adopt(presenterKey: kept)
        var save: [Effect] = changed ? [.save] : []  // the record the room keeps changed: keep it
        if changed, kept != digest, hasPresenters { save.append(.evictPresenters) }
        guard let followKey = followKeyAfterBinding else { return save }
        followKeyAfterBinding = nil
        guard let kept, ConstantTime.equal(kept.utf8, digest.utf8) else { return save + [.followKeyNotSet] }
        return setFollowKey(followKey, shared: true)
    }

    /// The presenter key record the engine holds (a snapshot's, or one a merge put back): a
    /// node that held none, or another, takes it, and its presenters who proved none of it go
    /// (docs/cluster.md §7.18). A room never loses its key to a node that fetched it keyless.
    mutating func adoptSharedKey(_ record: String) -> [Effect] {
        guard record != core.presenterKeyText else { return [] }
        let evict = hasPresenters
        core.adopt(presenterKey: record)
        return evict ? [.save, .evictPresenters] : [.save]
    }

    private var hasPresenters: Bool { core.members.firstID { $0.role == .presenter } != nil }
}
