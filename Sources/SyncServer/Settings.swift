import RedisClient
import ScrollModel
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// The configuration keys of `scrollsync serve`, and the sources they come from.
///
/// Precedence, highest first: command-line flags, environment (`SCROLLSYNC_…`), the
/// configuration file, the defaults. A key is dotted in flags and messages
/// (`limits.connections`), nested in files (`{"limits": {"connections": 100}}`) and upper
/// snake case in the environment (`SCROLLSYNC_LIMITS_CONNECTIONS`).
public struct Setting: Sendable {
    /// Dotted key, e.g. `listen.port`.
    public let key: String
    /// One line for `config check` and Config/README.md.
    public let help: String
    /// Masked whenever it is printed.
    public let secret: Bool
    let read: @Sendable (ServerConfiguration) -> JSON
    let write: @Sendable (inout ServerConfiguration, JSON) throws(ConfigurationError) -> Void
    /// How an environment variable's text becomes a value.
    let fromText: @Sendable (String) -> JSON

    /// `SCROLLSYNC_LIMITS_CONNECTIONS_PER_ADDRESS` for `limits.connectionsPerAddress`.
    public var environmentName: String {
        var name = "SCROLLSYNC_"
        for character in key {
            if character == "." { name += "_" } else if character.isUppercase { name += "_" + String(character) } else { name += character.uppercased() }
        }
        return name
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
        string("listen.host", \.host, "Address to bind; 0.0.0.0 or :: to serve other machines."),
        int("listen.port", \.port, 0...65535, "TCP port; 0 picks a free one."),
        optionalString("tls.certificate", \.tlsCertificateFile, "PEM certificate chain; with tls.key, serve wss://."),
        optionalString("tls.key", \.tlsKeyFile, "PEM private key for tls.certificate."),
        string("tls.ciphers", \.tlsCiphers, "TLS 1.2 cipher list (OpenSSL syntax), server's order; TLS 1.3 suites are always AEAD."),
        bool("echo", \.echoEnabled, "The /echo endpoint for conformance tests."),
        optionalInt("loops", \.loops, 1...1024, "Event loops (threads); null is one per core."),
        int("timeouts.handshake", \.handshakeTimeoutSeconds, 1...3600, "Seconds a client has to finish its upgrade request."),
        int("timeouts.idle", \.idleTimeoutSeconds, 1...86_400, "Seconds of silence before a ping; twice this drops the client."),
        int("timeouts.message", \.messageTimeoutSeconds, 1...3600, "Seconds a client has to finish a message it began (else close 1008)."),
        double("timeouts.shutdownGrace", \.shutdownGraceSeconds, 0...3600, "Seconds SIGTERM waits for clients to close before exiting."),
        int("limits.connections", \.limits.connections, 1...10_000_000, "Open connections in all."),
        int("limits.connectionsPerAddress", \.limits.connectionsPerAddress, 0...10_000_000, "Open connections per client address; 0 is no limit."),
        int("limits.rooms", \.limits.rooms, 1...10_000_000, "Rooms held at once."),
        int("limits.membersPerRoom", \.limits.membersPerRoom, 1...10_000_000, "Members of one room."),
        int("limits.roomCreationsPerMinute", \.limits.roomCreationsPerMinute, 0...1_000_000, "Rooms one address may create per minute; 0 is no limit."),
        int("limits.keyFailuresPerMinute", \.limits.keyFailuresPerMinute, 0...1_000_000, "Wrong presenter keys one address may try per room and minute; 0 is no limit."),
        int("limits.unclaimedRoomsPerAddress", \.limits.unclaimedRoomsPerAddress, 0...1_000_000, "Rooms one address may hold that no presenter has joined; 0 is no limit."),
        int("limits.roomMessageBytes", \.limits.roomMessageBytes, 1024...(64 << 20), "Largest /rooms message."),
        int("limits.documentBytes", \.limits.documentBytes, 0...(32 << 20), "Largest shared document."),
        int("limits.echoMessageBytes", \.limits.echoMessageBytes, 125...(1 << 30), "Largest /echo message."),
        int("limits.unfinishedMessageBytes", \.limits.unfinishedMessageBytes, 1 << 16...(1 << 40), "Bytes all connections may hold in unfinished messages (else close 1013)."),
        int("limits.requestHeadBytes", \.limits.requestHeadBytes, 1024...(1 << 20), "Largest HTTP request head."),
        double("limits.scrollRate", \.limits.scrollRate, 0...1_000_000, "Scroll messages per second per presenter; 0 is no limit."),
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
        stringList("origins", \.allowedOrigins, "Browser Origin values allowed to connect besides this server's own pages (same origin); \"*\" allows any. Clients without Origin are accepted."),
        optionalString("admin.token", \.adminToken, "Bearer token for GET /rooms and GET /metrics; null leaves them open.", secret: true),
        optionalString("auth.secret", \.authSecret, "Secret of the HS256 tokens applications sign for room connections (at least 32 characters); null accepts no tokens.", secret: true),
        bool("auth.required", \.authRequired, "Every room connection needs a signed token (token=… or Authorization: Bearer)."),
        bool("rooms.requireKeys", \.rooms.requirePresenterKey, "Presenters must give a key to create or join a room."),
        int("rooms.idleSeconds", \.rooms.roomIdleSeconds, 1...31_536_000, "Seconds an empty room keeps its state before it is forgotten."),
        int("rooms.undrivenIdleSeconds", \.rooms.undrivenIdleSeconds, 1...31_536_000, "Seconds an empty room that was never driven is kept."),
        bool("rooms.conflation", \.rooms.conflation, "Send slow followers the newest state instead of every state."),
        bool("rooms.record", \.rooms.recordRooms, "Record every room (GET /rooms/NAME/recording); otherwise a room is recorded when its presenter asks (record=1)."),
        choice("log.level", \.log.level, "Least severe event written: trace, debug, info, notice, warning, error, critical."),
        bool("log.json", \.log.json, "One JSON object per log line."),
        optionalString("store.directory", \.dataDirectory, "Where rooms are kept across restarts; null keeps them in memory only."),
        optionalString("redis.url", \.redisURL, "redis://HOST:PORT[/DB] (rediss:// for TLS) shares rooms with other nodes; null serves this process alone."),
        stringList("redis.shards", \.redisShards, "More Redis servers (redis://…) to spread rooms over with redis.url, by a stable hash of the room's name; every node lists the same ones in the same order."),
        optionalString("redis.password", \.redisPassword, "Password for Redis AUTH.", secret: true),
        optionalString("redis.secret", \.redisSecret, "Secret (at least 32 characters, the same on every node) that signs what nodes publish to each other through Redis; they refuse what is not signed. null: any client of that Redis that may PUBLISH can change rooms.", secret: true),
        optionalString("redis.caFile", \.redisCAFile, "CA certificates (PEM) for a rediss:// server; null trusts the system's roots."),
        bool("redis.cluster", \.redisCluster, "redis.url (and redis.shards) are nodes of a Redis Cluster (7 or later): rooms live on the masters that serve their slots, with sharded pub/sub."),
    ]

    public static func setting(_ key: String) -> Setting? { all.first { $0.key == key } }

    /// Applies `overrides` (key → value) to `configuration`; unknown keys and bad values throw.
    public static func apply(_ overrides: [(key: String, value: JSON)], to configuration: inout ServerConfiguration, source: String) throws(ConfigurationError) {
        for (key, value) in overrides {
            guard let setting = setting(key) else {
                if all.contains(where: { $0.key.hasPrefix(key + ".") }) {
                    throw ConfigurationError("\(source): \(key): expected an object with keys \(all.filter { $0.key.hasPrefix(key + ".") }.map(\.key).joined(separator: ", "))")
                }
                let near = all.map(\.key).min { distance($0, key) < distance($1, key) }
                let hint = near.map { distance($0, key) <= 3 ? " (did you mean \($0)?)" : "" } ?? ""
                throw ConfigurationError("\(source): unknown key \(key)\(hint)")
            }
            do {
                try setting.write(&configuration, value)
            } catch {
                let name = source == "environment" ? "\(setting.environmentName) (\(key))" : key
                throw ConfigurationError("\(source): \(name): \(error.message)")
            }
        }
    }

    /// The keys and values of a configuration file's JSON text (nested objects flattened).
    public static func fileValues(_ text: String, source: String) throws(ConfigurationError) -> [(key: String, value: JSON)] {
        let json: JSON
        do { json = try JSON.parse(text) } catch { throw ConfigurationError("\(source): not JSON: \(error)") }
        guard case .object = json else { throw ConfigurationError("\(source): the top level must be an object") }
        var values = [(key: String, value: JSON)]()
        func flatten(_ json: JSON, prefix: String) {
            guard case .object(let members) = json else { values.append((prefix, json)); return }
            // An object is a value only where a key expects one; none does, so objects nest.
            for (name, value) in members { flatten(value, prefix: prefix.isEmpty ? name : prefix + "." + name) }
        }
        flatten(json, prefix: "")
        return values
    }

    /// `SCROLLSYNC_…` variables that name keys. A variable with that prefix that names no
    /// key is an error (a typo would otherwise be silently ignored).
    public static func environmentValues(_ environment: [String: String]) throws(ConfigurationError) -> [(key: String, value: JSON)] {
        var values = [(key: String, value: JSON)]()
        for (name, text) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix("SCROLLSYNC_") {
            if name == "SCROLLSYNC_CONFIG" { continue }
            guard let setting = all.first(where: { $0.environmentName == name }) else {
                throw ConfigurationError("environment: \(name) names no configuration key")
            }
            values.append((setting.key, setting.fromText(text)))
        }
        return values
    }

    /// The effective configuration as nested JSON, secrets masked; a valid configuration file.
    public static func describe(_ configuration: ServerConfiguration) -> String {
        var root = JSON.object([])
        for setting in all {
            var value = setting.read(configuration)
            if setting.secret && !value.isNull { value = .string("********") }
            if setting.key == "redis.url", case .string(let url) = value { value = .string(Self.maskingPassword(url)) }
            root = inserting(value, at: setting.key.split(separator: ".").map(String.init)[...], into: root)
        }
        return pretty(root, indent: "")
    }

    /// A URL with the password of its user information (`//user:PASSWORD@`) masked.
    static func maskingPassword(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return url }
        return String(url[..<authority.index(after: colon)]) + "********" + String(url[at...])
    }

    private static func inserting(_ value: JSON, at path: ArraySlice<String>, into json: JSON) -> JSON {
        guard case .object(var members) = json, let name = path.first else { return value }
        if let index = members.firstIndex(where: { $0.0 == name }) {
            members[index].1 = inserting(value, at: path.dropFirst(), into: members[index].1)
        } else {
            members.append((name, inserting(value, at: path.dropFirst(), into: .object([]))))
        }
        return .object(members)
    }

    private static func pretty(_ json: JSON, indent: String) -> String {
        guard case .object(let members) = json, !members.isEmpty else {
            var writer = JSONWriter()
            writer.value(json)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        let inner = indent + "  "
        return "{\n" + members.map { inner + "\"\($0.0)\": " + pretty($0.1, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "}"
    }

    /// Checks what no single key can: settings that only make sense together.
    public static func validate(_ configuration: ServerConfiguration) throws(ConfigurationError) {
        guard (configuration.tlsCertificateFile == nil) == (configuration.tlsKeyFile == nil) else {
            throw ConfigurationError("tls.certificate and tls.key go together")
        }
        guard configuration.limits.documentBytes <= configuration.limits.roomMessageBytes else {
            throw ConfigurationError("limits.documentBytes (\(configuration.limits.documentBytes)) cannot exceed limits.roomMessageBytes (\(configuration.limits.roomMessageBytes))")
        }
        if let url = configuration.redisURL {
            do { _ = try RedisEndpoint(url: url) } catch { throw ConfigurationError("redis.url: \(error)") }
        }
        if configuration.redisCluster {
            guard let url = configuration.redisURL else { throw ConfigurationError("redis.cluster needs redis.url: a node of the cluster") }
            for url in [url] + configuration.redisShards where (try? RedisEndpoint(url: url))?.database ?? 0 != 0 {
                throw ConfigurationError("redis.cluster: a Redis Cluster has database 0 only (\(url))")
            }
        }
        for url in configuration.redisShards {
            guard configuration.redisURL != nil else { throw ConfigurationError("redis.shards needs redis.url: the first shard") }
            do { _ = try RedisEndpoint(url: url) } catch { throw ConfigurationError("redis.shards: \(error)") }
        }
        if let secret = configuration.authSecret, secret.utf8.count < 32 {
            throw ConfigurationError("auth.secret: at least 32 characters (an HMAC-SHA256 key should be as strong as its hash; e.g. openssl rand -hex 32)")
        }
        if let secret = configuration.redisSecret {
            guard secret.utf8.count >= 32 else { throw ConfigurationError("redis.secret: at least 32 characters (e.g. openssl rand -hex 32)") }
            guard configuration.redisURL != nil else { throw ConfigurationError("redis.secret needs redis.url: it signs what nodes publish there") }
        }
        if configuration.authRequired && configuration.authSecret == nil {
            throw ConfigurationError("auth.required needs auth.secret: nobody could sign a token the server accepts")
        }
        for (key, value) in [("admin.token", configuration.adminToken), ("auth.secret", configuration.authSecret), ("redis.secret", configuration.redisSecret)] {
            if let value, value.lowercased().contains("replace-with") {
                throw ConfigurationError("\(key): replace the example's placeholder with a secret of your own (e.g. openssl rand -hex 32)")
            }
        }
    }

    /// Edit distance, for suggesting the key meant.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    // MARK: Kinds of setting

    private static func int(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Int> & Sendable, _ range: ClosedRange<Int>, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .number(Double($0[keyPath: path]), text: String($0[keyPath: path])) },
                write: { configuration, json throws(ConfigurationError) in configuration[keyPath: path] = try integer(json, range) },
                fromText: number)
    }

    private static func optionalInt(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Int?> & Sendable, _ range: ClosedRange<Int>, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { $0[keyPath: path].map { .number(Double($0), text: String($0)) } ?? .null },
                write: { configuration, json throws(ConfigurationError) in configuration[keyPath: path] = json.isNull ? nil : try integer(json, range) },
                fromText: { $0.isEmpty || $0 == "null" ? .null : number($0) })
    }

    private static func double(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Double> & Sendable, _ range: ClosedRange<Double>, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .number($0[keyPath: path], text: format($0[keyPath: path])) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let value = json.double, range.contains(value) else {
                        throw ConfigurationError("expected a number from \(format(range.lowerBound)) to \(format(range.upperBound)), got \(show(json))")
                    }
                    configuration[keyPath: path] = value
                }, fromText: number)
    }

    private static func bool(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Bool> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .bool($0[keyPath: path]) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let value = json.bool else { throw ConfigurationError("expected true or false, got \(show(json))") }
                    configuration[keyPath: path] = value
                },
                fromText: { text in
                    switch text.lowercased() {
                    case "true", "1", "yes", "on": .bool(true)
                    case "false", "0", "no", "off": .bool(false)
                    default: .string(text)
                    }
                })
    }

    private static func string(_ key: String, _ path: WritableKeyPath<ServerConfiguration, String> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .string($0[keyPath: path]) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let value = json.string, !value.isEmpty else { throw ConfigurationError("expected a non-empty string, got \(show(json))") }
                    configuration[keyPath: path] = value
                }, fromText: { .string($0) })
    }

    private static func optionalString(_ key: String, _ path: WritableKeyPath<ServerConfiguration, String?> & Sendable, _ help: String, secret: Bool = false) -> Setting {
        Setting(key: key, help: help, secret: secret, read: { $0[keyPath: path].map { .string($0) } ?? .null },
                write: { configuration, json throws(ConfigurationError) in
                    if json.isNull { configuration[keyPath: path] = nil; return }
                    guard let value = json.string, !value.isEmpty else { throw ConfigurationError("expected a non-empty string or null, got \(secret ? "a \(kind(json))" : show(json))") }
                    configuration[keyPath: path] = value
                }, fromText: { $0.isEmpty ? .null : .string($0) })
    }

    private static func stringList(_ key: String, _ path: WritableKeyPath<ServerConfiguration, [String]> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .array($0[keyPath: path].map { .string($0) }) },
                write: { configuration, json throws(ConfigurationError) in
                    guard case .array(let items) = json else { throw ConfigurationError("expected a list of strings, got \(show(json))") }
                    var values = [String]()
                    for item in items {
                        guard let value = item.string, !value.isEmpty else { throw ConfigurationError("expected a list of strings, got \(show(item)) in it") }
                        values.append(value)
                    }
                    configuration[keyPath: path] = values
                },
                fromText: { .array($0.split(separator: ",").map { .string($0.trimmingPrefix(while: { $0 == " " }).description) }) })
    }

    private static func choice(_ key: String, _ path: WritableKeyPath<ServerConfiguration, ServerConfiguration.LogOptions.Level> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .string($0[keyPath: path].rawValue) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let text = json.string, let value = ServerConfiguration.LogOptions.Level(rawValue: text) else {
                        throw ConfigurationError("expected one of \(ServerConfiguration.LogOptions.Level.allCases.map(\.rawValue).joined(separator: ", ")), got \(show(json))")
                    }
                    configuration[keyPath: path] = value
                }, fromText: { .string($0) })
    }

    private static func integer(_ json: JSON, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let value = json.double, value.rounded() == value, value >= Double(range.lowerBound), value <= Double(range.upperBound) else {
            throw ConfigurationError("expected a whole number from \(range.lowerBound) to \(range.upperBound), got \(show(json))")
        }
        return Int(value)
    }

    private static func number(_ text: String) -> JSON {
        Double(text).map { .number($0, text: text) } ?? .string(text)
    }

    private static func format(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    private static func kind(_ json: JSON) -> String {
        switch json {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "list"
        case .object: "object"
        }
    }

    private static func show(_ json: JSON) -> String {
        var writer = JSONWriter()
        writer.value(json)
        let text = String(decoding: writer.bytes, as: UTF8.self)
        return text.count > 60 ? kind(json) : text
    }
}

extension Settings {
    /// Checks what the configuration names outside itself, as `serve` will use it: the TLS
    /// certificate and key are regular files (never a FIFO, which would hang a start or a
    /// reload, a directory or a device), can be read and load together (a key that does not
    /// match its certificate, an expired format, a typo in a path); the Redis CA file can be read;
    /// the data directory is a writable directory, or one that can be made. Each failure names
    /// the key and the file, so that `config check` finds what would stop `serve`.
    public static func checkResources(_ configuration: ServerConfiguration) throws(ConfigurationError) {
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            for (name, path) in [("tls.certificate", certificate), ("tls.key", key)] { try requireRegularFile(name, path) }
            do {
                _ = try TLSContext(certificateChainFile: certificate, privateKeyFile: key, ciphers: configuration.tlsCiphers)
            } catch {
                throw ConfigurationError("tls.certificate and tls.key (\(certificate), \(key)) do not load: \(error)")
            }
        }
        if let file = configuration.redisCAFile { try requireRegularFile("redis.caFile", file) }
        if let directory = configuration.dataDirectory, configuration.redisURL == nil {
            var status = stat()
            if stat(directory, &status) == 0 {
                guard status.st_mode & S_IFMT == S_IFDIR else { throw ConfigurationError("store.directory: \(directory) is not a directory") }
                guard access(directory, W_OK | X_OK) == 0 else {
                    throw ConfigurationError("store.directory: \(directory) is not writable: \(String(cString: strerror(errno)))")
                }
            } else {
                // It will be made: the nearest directory that exists must take it.
                var parent = directory
                repeat {
                    parent = parent.contains("/") ? String(parent[..<parent.lastIndex(of: "/")!]) : "."
                    if parent.isEmpty { parent = "/" }
                } while stat(parent, &status) != 0 && parent != "/" && parent != "."
                guard access(parent, W_OK | X_OK) == 0 else {
                    throw ConfigurationError("store.directory: \(directory) does not exist and \(parent) is not writable: \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    /// `name`'s file can be read and is a regular file (read whole: these are small, and a
    /// CA bundle of every public root is about 200 KiB).
    private static func requireRegularFile(_ name: String, _ path: String) throws(ConfigurationError) {
        do {
            _ = try readRegularFile(path, atMost: 4 << 20)
        } catch {
            throw ConfigurationError("\(name): cannot read \(path): \(error)")
        }
    }
}
