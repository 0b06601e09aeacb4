import Dispatch
import ScrollModel
import SyncClient
import Synchronization
import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// What `scrollsync load` does: rooms, followers, presenters and their pace.
public struct LoadConfiguration: Sendable {
    /// The server, e.g. `ws://127.0.0.1:8080`; rooms are `/rooms/PREFIX-N`.
    public var base: WebSocketURL
    /// Other nodes serving the same rooms: followers connect to these in turn (presenters
    /// to `base`). Empty: everyone connects to `base`.
    public var followerBases: [WebSocketURL] = []
    public var rooms = 1
    /// Followers per room.
    public var followers = 100
    /// Scroll updates per second per presenter.
    public var rate = 60.0
    /// Instead of a rate: keep this many updates in flight per presenter (the next one
    /// goes out when the presenter sees its own state come back). Measures throughput.
    public var inFlight: Int?
    /// Seconds each phase sends for.
    public var duration = 10.0
    /// Seconds over which connections are opened.
    public var rampUp = 0.0
    public var compress = false
    public var verifyTLS = true
    public var caFile: String?
    /// Fraction of followers that stop reading for `pause` seconds at a time (then read
    /// for a second). Their sockets get a 4 KiB receive buffer, so that what they miss
    /// piles up at the server, where conflation can replace it, as it does for a real
    /// client that is slow to read.
    public var slowReaders = 0.0
    /// The kernel receive buffer of slow readers in bytes (nil: the system's, as a
    /// terminal follower has); 4 KiB plays a reader with almost none.
    public var slowReceiveBuffer: Int? = 4096
    public var pause = 1.0
    /// Seconds after sending stops for the last states to arrive.
    public var drain = 2.0
    public var roomPrefix = "load"
    /// The client loops poll without sleeping (`EventLoop.busyPolling`).
    public var busyPolling = false

    /// Presenters replay these moves at their times (a recorded session, `--trace`), from
    /// the start again when it ends, instead of sending at `rate`.
    public var trace: Trace?
    /// Local addresses to connect from, a room's connections all from one, rooms spread over
    /// them in turn (empty: the system's choice). A server limits what one address may do
    /// (rooms created per minute, unclaimed rooms): many rooms need many addresses.
    public var sources: [SocketAddress] = []

    /// Rooms one address may create by the server's defaults without a refusal (it allows
    /// 60 a minute and 50 unclaimed): `loopbackSources` spreads over more past it.
    public static let roomsPerSource = 50

    /// 127.0.0.2, 127.0.0.3, …: enough loopback addresses (all of 127/8 is this machine's)
    /// for `rooms` rooms at `roomsPerSource` each, at most 250.
    public static func loopbackSources(rooms: Int) -> [SocketAddress] {
        let count = min(250, (rooms + roomsPerSource - 1) / roomsPerSource)
        return (0..<count).compactMap { try? SocketAddress.resolve(host: "127.0.0.\($0 + 2)", port: 0) }
    }

    public init(base: WebSocketURL) { self.base = base }

    public var connections: Int { rooms * (followers + 1) }
}

/// Progress of a running phase, once a second.
/// A presenter's moves from a recording (`--trace`): the way a person really scrolls, bursts
/// while paging and long pauses while talking.
public struct Trace: Sendable {
    public struct Move: Sendable {
        /// Seconds from the trace's start (already divided by the speed).
        public var seconds: Double
        public var offset: Double
        public var viewport: Double?
        public var content: Double?
    }

    /// The recording's file name, and how many times as fast it plays.
    public var name: String
    public var speed: Double
    public var moves: [Move]
    /// One pass (a trace plays again from its start when it ends).
    public var duration: Double { max(moves.last?.seconds ?? 0, 0.001) }

    /// The states of `recording` as moves, `speed` times as fast.
    public init(_ recording: Recording, name: String, speed: Double) {
        self.name = name
        self.speed = speed
        let states = recording.events.compactMap { event -> (Double, ScrollState)? in
            if case .state(let state) = event.message { (event.seconds, state) } else { nil }
        }
        let start = states.first?.0 ?? 0
        moves = states.map { Move(seconds: ($0.0 - start) / speed, offset: $0.1.offset, viewport: $0.1.viewport, content: $0.1.content) }
    }
}

public struct LoadProgress: Sendable {
    public var elapsed: Double
    public var connected: Int
    public var total: Int
    public var updatesPerSecond: Double
    public var deliveriesPerSecond: Double
    /// Age of received states at p99, and staleness at p99, so far (µs).
    public var ageP99Microseconds: UInt64
    public var stalenessP99Microseconds: UInt64
    public var errors: Int
}
