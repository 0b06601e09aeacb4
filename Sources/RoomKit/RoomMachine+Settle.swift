import ScrollModel

/// The rules every step ends with, whatever path changed the room: checked once here rather
/// than on each path (a snapshot, a change from another node, a led state, a member's join).
extension RoomMachine {
    /// After each step: a take or a claim whose change the room now holds ends its wait (its
    /// version reached, `ControlWait`); a room a follower created is claimed as soon as it is
    /// driven anywhere (it has a state, a driver, a document or a presenter key), on every node
    /// that holds it, not only where its presenter joined (docs/cluster.md, divergence 4).
    @inline(__always)
    mutating func afterStep(_ effects: inout [Effect]) {
        if !controlWaits.isEmpty { finishReachedControlWaits(&effects) }
        if creator != nil { settleIfDriven(&effects) }
    }

    private mutating func settleIfDriven(_ effects: inout [Effect]) {
        guard let creator, core.isDriven else { return }
        self.creator = nil  // claimed: no longer held against the follower's address
        effects.append(.settleCreation(creator))
    }
}
