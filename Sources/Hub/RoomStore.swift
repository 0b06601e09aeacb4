package import Access
import CLinux
import COpenSSL
import Logging
import ScrollModel
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// What a room keeps across restarts: its last state, shared document and presenter key
/// (as a digest; the key itself is never stored).
public struct StoredRoom: Sendable, Equatable {
    public var name: String
    public var state: ScrollState?
    public var document: SharedDocument?
    public var keyDigest: String?
    /// The room had a key that could not be read back: it is restored locked (presenters
    /// refused), never keyless.
    public var locked = false
    /// The highest `seq` the room may use before the store has written a higher one: a
    /// restarted room continues above it, so `seq` never goes back across a crash.
    public var seqCeiling = 0
    /// A private room's follow key record (`FollowKey.unreadable` when it could not be read
    /// back: the room stays private).
    public var followKey: String?

    public init(name: String, state: ScrollState?, document: SharedDocument?, keyDigest: String?, locked: Bool = false, seqCeiling: Int = 0,
                followKey: String? = nil) {
        self.name = name
        self.followKey = followKey
        self.state = state
        self.document = document
        self.keyDigest = keyDigest
        self.locked = locked
        self.seqCeiling = seqCeiling
    }
}

/// How the store is doing, for /healthz and /metrics.
public struct StoreHealth: Sendable, Equatable {
    /// The last write failed and is being retried (disk full, read-only, gone).
    public var failing = false
    /// What the last failure said.
    public var lastError: String?
    /// Writes that failed since start (each is retried).
    public var failedWrites = 0
    /// Files found damaged at start-up (checksum, format or values).
    public var damagedFiles = 0
    /// Rooms waiting to be written.
    public var pendingRooms = 0
}

/// Where rooms are kept. `save` and `remove` never block the caller (an event loop).
public protocol RoomStore: AnyObject, Sendable {
    /// The stored rooms to restore at start-up, most recently changed first, within `budget`;
    /// the others are forgotten (they were idle, and would expire as restored empty rooms do).
    func loadAll(within budget: RestoreBudget) throws(StoreError) -> [StoredRoom]
    /// Records a room's newest contents; a later save of the same room replaces it. Once its
    /// state is written, `written` hears the room's `seqCeiling` (now safe to use).
    func save(_ room: StoredRoom)
    /// Forgets a room.
    func remove(_ name: String)
    /// Waits until everything saved so far is written (a few seconds at most); false when
    /// something could not be written.
    @discardableResult func flush() -> Bool
    /// Writes what is pending and lets another server (or a restart in this process) use it.
    func close()
    var health: StoreHealth { get }
    /// Called on the store's thread with a room's name and the `seq` ceiling just written.
    var written: (@Sendable (String, Int) -> Void)? { get set }
}

/// How much of the server's limits restored rooms may take: the rest is for rooms people
/// create after the restart, which a full table of idle restored rooms would refuse.
public struct RestoreBudget: Sendable {
    public var rooms: Int
    /// Bytes of documents, all restored rooms together (0: no limit).
    public var documentBytes: Int
    /// What one stored state or document may hold (the limits a client's messages have).
    public var limits: ClientMessage.Limits

    public init(rooms: Int = .max, documentBytes: Int = 0, limits: ClientMessage.Limits = .init()) {
        self.rooms = rooms
        self.documentBytes = documentBytes
        self.limits = limits
    }
}

public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
