import ScrollModel
import Synchronization

/// Session ids, unique in a process (a counter through a bijective mix, SplitMix64's) and
/// across nodes for all practical purposes (a random seed per process). Ids are public
/// (`driver`, `state.by`), not secrets; one `getrandom` per process, not per connection,
/// keeps them off the handshake's cost.
extension SessionID {
    package static func make() -> SessionID { SessionIDSource.process.make() }
}

/// Where a server draws its session ids (its members' and its node id) from: the process's
/// source (random seed, one counter for the process) unless given one. The cluster simulation
/// gives each run one seeded from its seed, so that a seed's ids, and what depends on them,
/// are the same in a campaign as alone (docs/cluster.md §8).
package final class SessionIDSource: Sendable {
    private let seed: UInt64
    private let counter = Atomic<UInt64>(0)

    package init(seed: UInt64) { self.seed = seed }

    /// The process's source: a random seed.
    package static let process = SessionIDSource(seed: UInt64.random(in: .min ... .max))

    package func make() -> SessionID {
        var z = seed &+ counter.add(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return SessionID(z ^ (z >> 31))
    }
}
