import ScrollModel

/// How a hub shares its rooms with other nodes. The hub keeps a local copy of each room
/// for its own members; the engine orders changes (the lease holder's node orders its
/// driver's states), holds the one driver lease per room, and brings every node's changes back to the hub through
/// `SharedRoomsDelegate`. Calls are safe from any thread; answers come on the engine's loop.
public protocol RoomEngine: AnyObject, Sendable {
    /// Whether changes go through the engine now; while false the hub serves its rooms alone.
    var isAvailable: Bool { get }
    /// Where changes from other nodes go; set before `start()`.
    var delegate: (any SharedRoomsDelegate)? { get set }
    /// Fetches a room's shared state (nil: unavailable, serve the room locally).
    func attach(room: String, reply: @escaping @Sendable (RoomSnapshot?) -> Void)
    /// This node no longer holds the room (forgotten, or never driven and left): it stops
    /// hearing the room's changes until it attaches again.
    func detach(room: String)
    /// Publishes a state: `suffix` is its JSON after `"seq":`, which the engine assigns: the
    /// next above the room's (its hash's) and `seq` at least (the hash may lag the room's newest).
    func scroll(room: String, session: String, suffix: [UInt8], seq: Int, done: @escaping @Sendable (EngineResult) -> Void)
    /// A state this node ordered as the holder of the room's driver lease (the driver is one
    /// of its members): published as it is, and kept as the room's newest (written back at a
    /// bounded rate; a node that fetches the room asks for the newest, see `sharedStateWanted`).
    /// No script runs: the other nodes take it only from the room's driver and above their `seq`.
    /// `keep` false: published only (another node's state, passed on to a node that asked).
    /// `message` is the state's encoded `state` message (as members got it), `seq` and `by` its
    /// own (written back only while `by` holds the lease).
    func publish(led message: [UInt8], seq: Int, by: String, room: String, keep: Bool)
    /// This node's driver lost the room's lease: a led state not yet written back is dropped.
    func forgetLed(room: String)
    /// Asks every other node that holds the room for its newest state (`sharedStateWanted`
    /// there): each passes it on, and each node takes what is newer than its own.
    func askNewest(room: String)
    /// Changes or keeps the room's driver lease.
    func control(room: String, _ action: ControlAction, done: @escaping @Sendable (EngineResult) -> Void)
    /// Publishes a `document` message (its JSON text).
    func share(document message: [UInt8], room: String, done: @escaping @Sendable (EngineResult) -> Void)
    /// Makes the room private with this follow key record, on every node.
    func setFollowKey(room: String, record: String)
    /// Keeps a presenter key digest unless the room has one; answers the one it keeps.
    func bindKey(room: String, digest: String, reply: @escaping @Sendable (String?) -> Void)
    /// This node's member counts in a room.
    func presence(room: String, counts: Presence)
    /// Takes one of `limit` uses of a count every node shares for `windowMilliseconds` (e.g. a
    /// client's key checks for a room): true if taken, false if none is left, nil when the
    /// engine cannot say (the node's own count still applies).
    func take(count: String, room: String, limit: Int, windowMilliseconds: Int, reply: @escaping @Sendable (Bool?) -> Void)
    /// Gives one use of a shared count back.
    func giveBack(count: String, room: String)
    /// The hub refused a change the engine brought (a version or seq that cannot follow the
    /// room's, a document over this node's budget): counted and logged as refused input.
    /// Called on the engine's loop.
    func refused(_ refusal: SharedInput.Refusal, room: String)
    /// After an outage: merges what this node did alone into the shared room and answers it.
    func reconcile(room: String, local: RoomSnapshot, reply: @escaping @Sendable (RoomSnapshot?) -> Void)
    /// The `seq` clock: the wall clock in microseconds since 2026-01-01, where a new hash's `seq`
    /// starts and a new lease's first state at least (`RoomMachine.leap(above:)`).
    var seqNow: Int { get }
}

/// What a hub hears from its engine, on the engine's loop.
public protocol SharedRoomsDelegate: AnyObject, Sendable {
    /// A change any node made, checked (`SharedInput`); `version` orders the room's changes.
    func shared(room: String, version: Int, change: SharedChange)
    /// A state the lease holder's node ordered (`RoomEngine.publish(led:seq:by:room:keep:)`), checked.
    func shared(room: String, led state: ScrollState)
    /// Another node fetched the room: publish this node's newest state of it again.
    func sharedStateWanted(room: String)
    /// A change this node heard was overtaken before it could be confirmed (the room went on
    /// past it: this node was paused or slow): it missed changes and fetches the room again.
    func sharedChangesMissed(room: String)
    /// Another node's member counts.
    func shared(room: String, node: String, presence: Presence)
    /// The engine became available (after an outage, rooms should reconcile) or went away.
    func sharedAvailability(_ available: Bool)
}

/// A room as the engine keeps it.
public struct RoomSnapshot: Sendable, Equatable {
    /// Orders changes: one more per change published.
    public var version = 0
    public var state: ScrollState?
    public var document: SharedDocument?
    public var keyDigest: String?
    /// A private room's follow key record.
    public var followKey: String?
    public var driver: String?
    public var driverName: String?
    /// The hash's `seq` (0: none): the room's states continue above it, also when the hash
    /// holds no state yet (a new hash starts at the wall clock, docs/cluster.md §2).
    public var seq = 0
    /// Member counts by node (other nodes only, for a snapshot from the engine).
    public var nodes: [String: Presence] = [:]

    public init() {}
}

public enum ControlAction: Sendable {
    /// Take the lease whoever holds it.
    case take(session: String, name: String?)
    /// Take it only if nobody holds it (a presenter joins).
    case claim(session: String, name: String?)
    /// Take it if the driver the node knows (`stale`) lost its lease (its node died).
    case inherit(session: String, name: String?, stale: String)
    /// Say that nobody drives if the driver the node knows (`stale`) lost its lease and nobody
    /// took it since (its node died, and no presenter is here to inherit it): every node then
    /// agrees the room is undriven (docs/cluster.md, divergence 6).
    case lapse(stale: String)
    /// Keep it a while longer (the driver is still connected).
    case renew(session: String)
    /// Free it now (release or disconnect).
    case release(session: String)
}

public enum EngineResult: Sendable, Equatable {
    case done
    /// The engine ordered the change under this version (a control change): the room here
    /// has it once its version reaches that one.
    case ordered(version: Int)
    /// The engine refused the change (e.g. the lease moved to another driver).
    case refused(ProtocolError)
    /// The engine could not be reached; the hub applies the change locally.
    case unavailable
}

/// The timing every node of a cluster keeps alike, whatever engine carries the changes.
package enum SharedTiming {
    /// How often a node answers another's question for the room's newest state (250 ms): the
    /// lease holder's node orders it again, another node passes it on, at most once per
    /// interval and once at its end. (Named when the hash was written as often; a led state now
    /// waits for it as `WriteBackQueue` says: once the room rests, at most a second.)
    package static let writeBackNanoseconds: UInt64 = 250_000_000
    /// How far nodes' wall clocks may disagree (60 s, in microseconds): a state from another
    /// node numbered up to this far above this node's `seq` clock is plausible (a new lease's
    /// first state numbers from its node's clock).
    package static let clockSkewMicroseconds = 60_000_000
    /// How far a new lease's first state leaps over the room's `seq` at least
    /// (`RoomMachine.handoverLeap`, which says why); a merge that keeps its driver numbers its
    /// state so too (the `reconcile` script).
    package static let handoverLeap = 1024

    /// The highest `seq` a state from another node may have above a room's `seq` before it is
    /// taken for one that cannot follow (`SeqReservation.block`), or as far as the `seq` clock
    /// and the clocks' skew allow (`seqNow` 0: no clock).
    package static func plausibleSeq(above seq: Int, seqNow: Int) -> Int {
        max(seq + SeqReservation.block, seqNow > 0 ? seqNow + clockSkewMicroseconds : 0)
    }
    /// How long a take or a claim waits for its outcome at most (`RoomMachine.ControlWait`):
    /// longer than the Redis client's 3 s timeout, by which an unanswered command is answered
    /// `.unavailable`; past it, a change the engine ordered but this node never heard (a lost
    /// subscription) holds the taker's scroll and the presenter's welcome no longer.
    package static let controlOutcomeNanoseconds: UInt64 = 4_000_000_000
    /// A node's counts older than this are taken as those of a node that died.
    package static let presenceLifetimeMilliseconds = 15_000
}

/// How every `state` message starts: the engine writes `seq` after it.
package let statePrefix = Array(#"{"type":"state","seq":"#.utf8)

/// A state message's JSON after `"seq":N` (what `RoomEngine.scroll` takes).
package func stateSuffix(_ state: ScrollState) -> [UInt8] {
    stateSuffix(ServerMessage.state(state))
}

/// The same, of an encoded `state` message.
package func stateSuffix(_ message: [UInt8]) -> [UInt8] {
    var index = statePrefix.count
    while index < message.count, message[index] >= UInt8(ascii: "0"), message[index] <= UInt8(ascii: "9") { index += 1 }
    return Array(message[index...])
}
