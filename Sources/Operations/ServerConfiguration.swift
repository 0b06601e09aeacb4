import ScrollModel
import Transport
import WebSocketCore

/// How `scrollsync serve` runs. Every limit is finite or explicitly off; each default says
/// why it is what it is. `Settings` maps it to configuration files, environment variables
/// and flags; Config/README.md documents every key.
public struct ServerConfiguration: Sendable {
    /// Address to bind. Loopback by default so that a first run exposes nothing; use
    /// `0.0.0.0` or `::` to serve others.
    public var host = "127.0.0.1"
    /// TCP port; 0 picks a free one (the log line names it).
    public var port = 8080
    /// PEM certificate chain and private key; both or neither. With them the server speaks wss://.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// TLS 1.2 cipher list (OpenSSL syntax): forward-secret AEAD suites only (ECDHE with
    /// AES-GCM or ChaCha20-Poly1305), in the server's order. TLS 1.3 suites are all AEAD
    /// with forward secrecy.
    public var tlsCiphers = TLSContext.forwardSecretCiphers
    /// The `/echo` endpoint for conformance tests (Autobahn, interop).
    public var echoEnabled = true
    /// Event loops (threads); one per core by default.
    public var loops: Int?
    /// A client must complete its upgrade request within this time: 10 s is ample on
    /// any real network and keeps a stalled half-request from holding a descriptor.
    public var handshakeTimeoutSeconds = 10
    /// After this long without hearing from a client, ping it; after twice this long,
    /// drop it. 30 s stays under common NAT and proxy idle timeouts (60 s).
    public var idleTimeoutSeconds = 30
    /// A message begun must be finished within this time (else close 1008), so that a
    /// client cannot hold a buffer for as long as it answers pings; 30 s is a 2 MiB room
    /// message at 70 KB/s.
    public var messageTimeoutSeconds = 30
    /// SIGTERM/SIGINT: time for clients to finish the close handshake before exit.
    public var shutdownGraceSeconds = 10.0
    /// Resource limits.
    public var limits = Limits()
    /// Browser `Origin` values allowed to connect besides pages of this server (same origin);
    /// `*` allows any. Clients that send no `Origin` (terminals, scripts) are always accepted.
    public var allowedOrigins: [String] = []
    /// Bearer token for `GET /rooms` and `GET /metrics`; nil leaves them open (the server binds
    /// loopback by default).
    public var adminToken: String?
    /// The secret applications sign room tokens with (HS256); nil: tokens are not accepted.
    public var authSecret: String?
    /// Every room connection needs a signed token.
    public var authRequired = false
    /// permessage-deflate policy.
    public var deflate = PerMessageDeflate.ServerPolicy()
    /// Rooms: presenter keys, idle expiry, conflation, recording.
    public var rooms = Rooms()
    /// Logging: threshold and format.
    public var log = LogOptions()
    /// Where rooms are kept across restarts; nil keeps them in memory only.
    public var dataDirectory: String? = "scrollsync-data"
    /// `redis://HOST:PORT[/DB]`: share rooms with other nodes through Redis (the file store
    /// is then off: Redis keeps the rooms). Nil: this process alone.
    public var redisURL: String?
    /// More Redis servers to spread rooms over with `redisURL` (by a stable hash of the room);
    /// with `redisCluster`, more nodes of the cluster to ask for its map.
    public var redisShards: [String] = []
    /// `redisURL` is a node of a Redis Cluster: rooms live on the masters that serve their
    /// slots, with sharded pub/sub.
    public var redisCluster = false
    /// Redis password (AUTH), instead of one in the URL.
    public var redisPassword: String?
    /// Signs what nodes publish to each other through Redis (HMAC-SHA256); nodes refuse what is
    /// not signed with it. Nil: any client of that Redis that may publish can speak for a node.
    public var redisSecret: String?
    /// CA certificates (PEM) that a `rediss://` server's certificate must chain to; nil:
    /// the system's roots.
    public var redisCAFile: String?

    public struct Limits: Sendable, Equatable {
        /// Open connections in all. 16,384 fits under the usual 20,000-descriptor limit with
        /// room for listeners and files; raise both together.
        public var connections = 16_384
        /// Open connections from one client address; 0 is no limit (the default, because
        /// NAT and load balancers put many users behind one address).
        public var connectionsPerAddress = 0
        /// Terminal readers (`GET /rooms/NAME/tty`) in all, and from one client address. Each
        /// is a connection sent a whole frame (2–20 KB at common sizes) per change of its room,
        /// ten times a follower's state: 2,048 at 60 changes a second is about 1 Gbit/s. 256 per
        /// address: an audience behind one NAT.
        public var ttyReaders = 2048
        public var ttyReadersPerAddress = 256
        /// Distinct terminal sizes one room renders (each a render per change); a reader of
        /// another size gets the nearest smaller. 8 covers an audience's usual terminals.
        public var ttySizesPerRoom = 8
        /// Rooms held at once.
        public var rooms = 10_000
        /// Members (presenters and followers) of one room.
        public var membersPerRoom = 16_384
        /// Rooms one client address may create per minute (and at once); 0 is no limit.
        /// 60: a person or a script opening rooms by hand never meets it; a loop filling the
        /// room table from one address does at once.
        public var roomCreationsPerMinute = 60
        /// Rooms one client address may hold that no presenter has joined (a follower waiting
        /// for its presenter); 0 is no limit. 50 covers an audience behind one NAT waiting in
        /// several rooms.
        public var unclaimedRoomsPerAddress = 50
        /// Wrong presenter keys one address may try per room and minute (0: no limit); past
        /// it: 429 until the minute is over. 10 covers typos and stops guessing.
        public var keyFailuresPerMinute = 10
        /// Largest `/rooms` message: 2 MiB, so that a 1 MiB document fits escaped.
        public var roomMessageBytes = 2 << 20
        /// Largest shared document (UTF-8 bytes).
        public var documentBytes = 1 << 20
        /// Largest `/echo` message: 16 MiB, the largest the Autobahn suite sends.
        public var echoMessageBytes = 16 << 20
        /// Bytes all connections together may hold in unfinished messages (fragmented, split
        /// over reads, or being inflated); past it a connection closes with 1013. 64 MiB takes
        /// several of the largest `/echo` messages at once, and caps what clients that start
        /// messages and never finish them can make the server hold.
        public var unfinishedMessageBytes = 64 << 20
        /// Largest HTTP request head: 8 KiB, as nginx and uWS accept.
        public var requestHeadBytes = 8192
        /// `scroll` messages per second per presenter (token bucket refill); 0 is no limit.
        /// 1,000 is far above any display's frame rate and stops a runaway client.
        public var scrollRate = 1000.0
        /// Scrolls a presenter may send at once before the rate applies.
        public var scrollBurst = 1000
        /// Per-address limits count an IPv6 client by this many leading bits of its address:
        /// 64, since one subscriber gets a /64 and may use any address in it.
        public var ipv6PrefixLength = 64
        /// Messages per second one room connection may send, of any kind (token bucket
        /// refill; 0 is no limit); past the burst the connection closes with 1008. Nil: twice
        /// the scroll rate (none when scrolls are not limited), so a presenter over the scroll
        /// rate is conflated, not closed, while a follower has nothing to send at that rate.
        public var messagesPerSecond: Int?
        /// Messages a room connection may send at once before the rate applies; nil: twice
        /// the scroll burst.
        public var messageBurst: Int?

        /// The message rate and burst in force (rate 0: no limit).
        public var inboundMessages: (rate: Double, burst: Int) {
            (messagesPerSecond.map(Double.init) ?? 2 * scrollRate, messageBurst ?? 2 * scrollBurst)
        }
        /// Documents a presenter may share per minute (0: no limit), and at once. A document
        /// goes to every member: 30 a minute is one every two seconds, far more than a person
        /// editing live shares, while a loop of 1 MiB documents cannot flood the room.
        public var documentsPerMinute = 30
        public var documentBurst = 5
        /// Bytes of shared documents all rooms together may hold (in memory, and so on disk);
        /// a document beyond it is refused with `too_large`. 256 MiB: 256 rooms with a 1 MiB
        /// document each, or thousands with ordinary ones.
        public var documentsTotalBytes = 256 << 20
        /// Bytes one room's recording may hold: 8 MiB is some 40,000 moves, hours of a talk.
        public var recordingBytes = 8 << 20
        /// Bytes all rooms' recordings may hold together (in memory, and so on disk).
        public var recordingsTotalBytes = 256 << 20
        /// Bytes of recordings one address (an IPv6 client: its prefix) may hold: 32 MiB, four
        /// rooms' full recordings and an eighth of the total, so that at least eight addresses
        /// are needed to fill it. 0 is no limit.
        public var recordingsBytesPerAddress = 32 << 20
        public init() {}
    }

    public struct Rooms: Sendable, Equatable {
        /// Presenters must give a key (`key=…`) to create or join a room.
        public var requirePresenterKey = false
        /// A room with no members is forgotten after this long: 10 minutes, so a presenter
        /// whose connection drops can come back to the same state.
        public var roomIdleSeconds = 600
        /// A room that nobody ever drove (no state, no document) is forgotten this soon after
        /// it empties: it holds nothing a returning presenter would miss but its key.
        public var undrivenIdleSeconds = 60
        /// Replace queued states with newer ones (on for users; off only to measure
        /// delivery of every state).
        public var conflation = true
        /// Record every room; otherwise a room is recorded once a presenter asks (`record=1`).
        public var recordRooms = false
        public init() {}
    }

    public struct LogOptions: Sendable, Equatable {
        public enum Level: String, Sendable, CaseIterable, Comparable {
            case trace, debug, info, notice, warning, error, critical
            public static func < (a: Level, b: Level) -> Bool { allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)! }
        }
        /// Events below this level are not written.
        public var level = Level.info
        /// One JSON object per line instead of text.
        public var json = false
        public init() {}
    }

    public init() {}

    /// Limits for `/echo` connections.
    package var echoLimits: WebSocketConnection.Limits {
        .init(maxFrameSize: limits.echoMessageBytes, maxMessageSize: limits.echoMessageBytes)
    }

    /// Limits for `/rooms` connections.
    package var roomLimits: WebSocketConnection.Limits {
        .init(maxFrameSize: limits.roomMessageBytes, maxMessageSize: limits.roomMessageBytes)
    }

    /// What a room's state and document may hold.
    package var messageLimits: ClientMessage.Limits {
        var limits = ClientMessage.Limits()
        limits.maxDocumentBytes = self.limits.documentBytes
        return limits
    }
}
