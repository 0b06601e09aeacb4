import ScrollModel

/// One configuration key of `scrollsync serve`: everything about it in one row of
/// `Settings.all`, from which its flags, environment variable, file key, the shipped defaults
/// (`Config/scrollsync.json`) and the documentation's tables come.
///
/// Precedence, highest first: command-line flags, environment (`SCROLLSYNC_…`), the
/// configuration file, the defaults. A key is dotted in flags and messages
/// (`limits.connections`), nested in files (`{"limits": {"connections": 100}}`) and upper
/// snake case in the environment (`SCROLLSYNC_LIMITS_CONNECTIONS`). The default, and why it
/// is what it is, is `ServerConfiguration`'s (the row reads it).
public struct Setting: Sendable {
    /// Dotted key, e.g. `listen.port`.
    public let key: String
    /// One line for `serve --help`, `config check` and Config/README.md.
    public let help: String
    /// Masked whenever it is printed.
    public let secret: Bool
    /// The flags of `scrollsync serve` that set it (none: file and environment only).
    public internal(set) var flags: [SettingFlag] = []
    /// A reload (SIGHUP) takes it; the others need a restart.
    public internal(set) var reloadable = false
    package let read: @Sendable (ServerConfiguration) -> JSON
    package let write: @Sendable (inout ServerConfiguration, JSON) throws(ConfigurationError) -> Void
    /// How an environment variable's text becomes a value.
    let fromText: @Sendable (String) -> JSON

    init(key: String, help: String, secret: Bool, read: @escaping @Sendable (ServerConfiguration) -> JSON,
         write: @escaping @Sendable (inout ServerConfiguration, JSON) throws(ConfigurationError) -> Void,
         fromText: @escaping @Sendable (String) -> JSON) {
        self.key = key
        self.help = help
        self.secret = secret
        self.read = read
        self.write = write
        self.fromText = fromText
    }

    /// `SCROLLSYNC_LIMITS_CONNECTIONS_PER_ADDRESS` for `limits.connectionsPerAddress`.
    public var environmentName: String {
        var name = "SCROLLSYNC_"
        for character in key {
            if character == "." { name += "_" } else if character.isUppercase { name += "_" + String(character) } else { name += character.uppercased() }
        }
        return name
    }

    /// The built-in value.
    public var defaultValue: JSON { read(ServerConfiguration()) }

    /// The value in `configuration`.
    public func value(in configuration: ServerConfiguration) -> JSON { read(configuration) }

    /// The default as the documentation's tables show it: a string bare, anything else as
    /// JSON; a value longer than 40 characters by its first 30 and `…`.
    public var documentedDefault: String {
        var text: String
        if case .string(let string) = defaultValue { text = string } else { text = Settings.compact(defaultValue) }
        if text.count > 40 { text = String(text.prefix(30)) + "…" }
        return text
    }

    /// Adds a flag of `serve`: `--NAME VALUE`, or with `sets`, `--NAME` alone giving that value.
    func flag(_ name: String, sets value: JSON? = nil, help: String? = nil) -> Setting {
        var setting = self
        setting.flags.append(SettingFlag(name: name, sets: value, help: help))
        return setting
    }

    /// Marks it as taken by a reload.
    func reloads() -> Setting {
        var setting = self
        setting.reloadable = true
        return setting
    }
}

/// A flag of `scrollsync serve` that sets a setting.
public struct SettingFlag: Sendable {
    /// The long name without dashes: `max-connections`.
    public let name: String
    /// The value a flag without an argument gives (`--no-echo`: false); nil: the flag takes one.
    public let sets: JSON?
    /// Help when the setting's own does not fit the flag.
    let ownHelp: String?

    init(name: String, sets: JSON?, help: String?) {
        self.name = name
        self.sets = sets
        self.ownHelp = help
    }
}

/// A configuration value that cannot be used; names the key and the reason.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum Settings {
    /// Every key, in the order `config check` prints them.
    public static let all: [Setting] = [
        string("listen.host", \.host, "Address to bind; 0.0.0.0 or :: to serve other machines.").flag("host"),
        int("listen.port", \.port, 0...65535, "TCP port; 0 picks a free one.").flag("port"),
        optionalString("tls.certificate", \.tlsCertificateFile, "PEM certificate chain; with tls.key, serve wss://.")
            .flag("tls-cert", help: "PEM certificate chain; with --tls-key, serve wss://.").reloads(),
        optionalString("tls.key", \.tlsKeyFile, "PEM private key for tls.certificate.").flag("tls-key", help: "PEM private key for --tls-cert.").reloads(),
        string("tls.ciphers", \.tlsCiphers, "TLS 1.2 cipher list (OpenSSL syntax), server's order; TLS 1.3 suites are always AEAD.").reloads(),
        bool("echo", \.echoEnabled, "The /echo endpoint for conformance tests.").flag("no-echo", sets: .bool(false), help: "Turn off the /echo conformance endpoint."),
        optionalInt("loops", \.loops, 1...1024, "Event loops (threads); null is one per core.").flag("loops", help: "Event loops (threads); default one per core."),
        int("timeouts.handshake", \.handshakeTimeoutSeconds, 1...3600, "Seconds a client has to finish its upgrade request.").flag("handshake-timeout"),
        int("timeouts.idle", \.idleTimeoutSeconds, 1...86_400, "Seconds of silence before a ping; twice this drops the client.").flag("idle-timeout"),
        int("timeouts.message", \.messageTimeoutSeconds, 1...3600, "Seconds a client has to finish a message it began (else close 1008)."),
        double("timeouts.shutdownGrace", \.shutdownGraceSeconds, 0...3600, "Seconds SIGTERM waits for clients to close before exiting.")
            .flag("shutdown-grace", help: "Seconds SIGTERM/SIGINT waits for clients to close (close 1001); a second signal exits at once."),
        int("limits.connections", \.limits.connections, 1...10_000_000, "Open connections in all.").flag("max-connections").reloads(),
        int("limits.connectionsPerAddress", \.limits.connectionsPerAddress, 0...10_000_000, "Open connections per client address; 0 is no limit.")
            .flag("max-connections-per-address").reloads(),
        int("limits.ttyReaders", \.limits.ttyReaders, 0...10_000_000, "Terminal readers (GET /rooms/NAME/tty) in all; 0 turns the endpoint's streams off."),
        int("limits.ttyReadersPerAddress", \.limits.ttyReadersPerAddress, 0...10_000_000, "Terminal readers from one client address; 0 is no limit."),
        int("limits.ttySizesPerRoom", \.limits.ttySizesPerRoom, 1...64, "Distinct terminal sizes one room renders; a reader of another size gets the nearest smaller."),
        int("limits.rooms", \.limits.rooms, 1...10_000_000, "Rooms held at once.").flag("max-rooms"),
        int("limits.membersPerRoom", \.limits.membersPerRoom, 1...10_000_000, "Members of one room.").flag("max-members"),
        int("limits.roomCreationsPerMinute", \.limits.roomCreationsPerMinute, 0...1_000_000, "Rooms one address may create per minute; 0 is no limit.")
            .flag("room-creations", help: "Rooms one client address may create per minute; 0 is no limit (load tests)."),
        int("limits.keyFailuresPerMinute", \.limits.keyFailuresPerMinute, 0...1_000_000, "Wrong presenter keys one address may try per room and minute; 0 is no limit."),
        int("limits.unclaimedRoomsPerAddress", \.limits.unclaimedRoomsPerAddress, 0...1_000_000, "Rooms one address may hold that no presenter has joined; 0 is no limit."),
        int("limits.roomMessageBytes", \.limits.roomMessageBytes, 1024...(64 << 20), "Largest /rooms message."),
        int("limits.documentBytes", \.limits.documentBytes, 0...(32 << 20), "Largest shared document."),
        int("limits.echoMessageBytes", \.limits.echoMessageBytes, 125...(1 << 30), "Largest /echo message."),
        int("limits.unfinishedMessageBytes", \.limits.unfinishedMessageBytes, 1 << 16...(1 << 40), "Bytes all connections may hold in unfinished messages (else close 1013)."),
        int("limits.requestHeadBytes", \.limits.requestHeadBytes, 1024...(1 << 20), "Largest HTTP request head."),
        double("limits.scrollRate", \.limits.scrollRate, 0...1_000_000, "Scroll messages per second per presenter; 0 is no limit.").flag("scroll-rate"),
        int("limits.documentsPerMinute", \.limits.documentsPerMinute, 0...1_000_000, "Documents a presenter may share per minute; 0 is no limit."),
        int("limits.documentBurst", \.limits.documentBurst, 1...1_000_000, "Documents a presenter may share at once before the rate applies."),
        int("limits.documentsTotalBytes", \.limits.documentsTotalBytes, 0...(1 << 40), "Bytes of shared documents all rooms may hold; 0 is no limit."),
        int("limits.recordingBytes", \.limits.recordingBytes, 1024...(1 << 34), "Bytes one room's recording may hold; past it the recording stops."),
        int("limits.recordingsTotalBytes", \.limits.recordingsTotalBytes, 0...(1 << 40), "Bytes all rooms' recordings may hold; 0 is no limit."),
        int("limits.recordingsBytesPerAddress", \.limits.recordingsBytesPerAddress, 0...(1 << 40), "Bytes of recordings the rooms one address (an IPv6 client: its prefix) asked to record may hold; 0 is no limit."),
        optionalInt("limits.messagesPerSecond", \.limits.messagesPerSecond, 0...10_000_000, "Messages per second one room connection may send, of any kind; past the burst: close 1008. 0 is no limit; null: twice limits.scrollRate."),
        optionalInt("limits.messageBurst", \.limits.messageBurst, 1...10_000_000, "Messages a room connection may send at once before the rate applies; null: twice limits.scrollBurst."),
        int("limits.ipv6PrefixLength", \.limits.ipv6PrefixLength, 1...128, "Per-address limits count IPv6 clients by this prefix length (one subscriber's network)."),
        int("limits.scrollBurst", \.limits.scrollBurst, 1...1_000_000, "Scrolls a presenter may send at once before the rate applies."),
        stringList("origins", \.allowedOrigins, "Browser Origin values allowed to connect besides this server's own pages (same origin); \"*\" allows any. Clients without Origin are accepted.")
            .flag("origin", help: "Allowed browser Origin (repeat for several) besides this server's own pages; \"*\" allows any.").reloads(),
        optionalString("admin.token", \.adminToken, "Bearer token for GET /rooms and GET /metrics; null leaves them open.", secret: true).reloads(),
        optionalString("auth.secret", \.authSecret, "Secret of the HS256 tokens applications sign for room connections (at least 32 characters); null accepts no tokens.", secret: true),
        bool("auth.required", \.authRequired, "Every room connection needs a signed token (token=… or Authorization: Bearer)."),
        bool("rooms.requireKeys", \.rooms.requirePresenterKey, "Presenters must give a key to create or join a room.")
            .flag("require-keys", sets: .bool(true), help: "Presenters must give a key (key=…) to create or join a room."),
        int("rooms.idleSeconds", \.rooms.roomIdleSeconds, 1...31_536_000, "Seconds an empty room keeps its state before it is forgotten.").flag("room-idle"),
        int("rooms.undrivenIdleSeconds", \.rooms.undrivenIdleSeconds, 1...31_536_000, "Seconds an empty room that was never driven is kept."),
        bool("rooms.conflation", \.rooms.conflation, "Send slow followers the newest state instead of every state.")
            .flag("no-conflation", sets: .bool(false), help: "Deliver every state to every follower instead of the newest (for throughput benchmarks)."),
        bool("rooms.record", \.rooms.recordRooms, "Record every room (GET /rooms/NAME/recording); otherwise a room is recorded when its presenter asks (record=1)."),
        choice("log.level", \.log.level, "Least severe event written: trace, debug, info, notice, warning, error, critical.").flag("log-level").reloads(),
        bool("log.json", \.log.json, "One JSON object per log line.").flag("log-json", sets: .bool(true), help: "Log one JSON object per line."),
        optionalString("store.directory", \.dataDirectory, "Where rooms are kept across restarts; null keeps them in memory only.")
            .flag("data-dir", help: "Directory where rooms are kept across restarts.")
            .flag("in-memory", sets: .null, help: "Keep rooms in memory only (nothing survives a restart)."),
        optionalString("redis.url", \.redisURL, "redis://HOST:PORT[/DB] (rediss:// for TLS) shares rooms with other nodes; null serves this process alone.")
            .flag("redis", help: "Share rooms with other nodes through Redis: redis://HOST:PORT[/DB], rediss:// for TLS."),
        stringList("redis.shards", \.redisShards, "More Redis servers (redis://…) to spread rooms over with redis.url, by a stable hash of the room's name; every node lists the same ones in the same order."),
        optionalString("redis.password", \.redisPassword, "Password for Redis AUTH.", secret: true),
        optionalString("redis.secret", \.redisSecret, "Secret (at least 32 characters, the same on every node) that signs what nodes publish to each other through Redis; they refuse what is not signed. null: any client of that Redis that may PUBLISH can change rooms.", secret: true),
        optionalString("redis.caFile", \.redisCAFile, "CA certificates (PEM) for a rediss:// server; null trusts the system's roots."),
        bool("redis.cluster", \.redisCluster, "redis.url (and redis.shards) are nodes of a Redis Cluster (7 or later): rooms live on the masters that serve their slots, with sharded pub/sub.")
            .flag("redis-cluster", sets: .bool(true), help: "--redis names a node of a Redis Cluster: rooms live on the masters that serve their slots."),
    ]

    public static func setting(_ key: String) -> Setting? { all.first { $0.key == key } }

    /// The setting and flag of `serve`'s `--NAME`.
    public static func flag(_ name: String) -> (setting: Setting, flag: SettingFlag)? {
        for setting in all { if let flag = setting.flags.first(where: { $0.name == name }) { return (setting, flag) } }
        return nil
    }

    /// What `serve --help` says of `--NAME`: the help and the key it sets (`[key]`, or
    /// `[key = value]` for a flag without an argument).
    public static func flagHelp(_ name: String) -> String {
        guard let (setting, flag) = flag(name) else { preconditionFailure("--\(name) is no flag in Settings.all") }
        let key = flag.sets.map { "\(setting.key) = \(compact($0))" } ?? setting.key
        return "\(flag.ownHelp ?? setting.help) [\(key)]"
    }

    /// The keys a reload takes, in table order.
    public static var reloadableKeys: [String] { all.filter(\.reloadable).map(\.key) }
}
