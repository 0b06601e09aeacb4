import ScrollModel

/// A room's snapshots on their way from the engine (fetches and merges, answered in the order
/// Redis ran them) and what the room's channel brought meanwhile. The channel and the answers
/// come on two connections: a change may arrive before the answer of a snapshot read before
/// the change was made. So what was heard goes to the hub after the room's last answer, the
/// changes newer than it; an earlier answer hands on nothing (the next one is newer still).
/// Without I/O: `RedisRoomEngine` keeps one per room being fetched.
package struct SnapshotWait {
    /// Snapshots asked for and not yet answered.
    package private(set) var pending = 0
    /// Changes heard meanwhile: with their version, or a led state (no version), or another
    /// node's question for the newest state (no change: answered after the room's last answer,
    /// in channel order, from what the room then holds).
    package private(set) var heard: [(version: Int?, change: SharedChange?)] = []

    package init() {}

    package mutating func asked() { pending += 1 }

    package mutating func hear(version: Int?, _ change: SharedChange?) { heard.append((version, change)) }

    /// Whether a led state by `driver` was heard.
    package func heardLed(by driver: String) -> Bool { !led(by: driver).isEmpty }

    /// The answer to the oldest snapshot asked for (nil: it failed). Returns the snapshot the
    /// hub takes (with the newest led state heard from its driver, within the leap a state may
    /// take, or as far as the `seq` clock `seqNow` allows: `RoomMachine.plausibleSeq`), the
    /// changes it takes after it (after the last answer only), and whether the wait is over.
    package mutating func answered(_ snapshot: RoomSnapshot?, seqNow: Int = 0) -> (snapshot: RoomSnapshot?, then: [(version: Int?, change: SharedChange?)], over: Bool) {
        pending = max(0, pending - 1)
        var snapshot = snapshot
        if let driver = snapshot?.driver {
            let base = max(snapshot?.state?.seq ?? 0, snapshot?.seq ?? 0)
            let plausible = SharedTiming.plausibleSeq(above: base, seqNow: seqNow)
            if let newest = led(by: driver).filter({ $0.seq <= plausible }).max(by: { $0.seq < $1.seq }), newest.seq > base {
                snapshot?.state = newest
            }
        }
        guard pending == 0 else { return (snapshot, [], false) }
        guard let taken = snapshot else { return (nil, [], true) }
        let then = heard.filter { entry in entry.version.map { $0 > taken.version } ?? true }
        return (snapshot, then, true)
    }

    /// The led states by `driver` heard.
    private func led(by driver: String) -> [ScrollState] {
        heard.compactMap { entry in
            guard entry.version == nil, case .state(let state)? = entry.change, state.by == driver else { return nil }
            return state
        }
    }
}
