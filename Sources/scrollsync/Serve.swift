import ArgumentParser
import Logging
import Operations
import ScrollModel
import SyncServer
import Transport
import TextSafety
#if canImport(Glibc)
import Glibc
#endif

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the ScrollSync server.",
        discussion: """
        Settings come from, highest first: these flags, SCROLLSYNC_… environment variables, the \
        configuration file (--config or SCROLLSYNC_CONFIG), the defaults. Config/README.md lists \
        every key; `scrollsync config check` prints the effective configuration. SIGHUP reads the \
        configuration again: a renewed certificate and the settings that can change while serving \
        (\(Settings.reloadableKeys.filter { !$0.hasPrefix("tls.") }.joined(separator: ", "))) are \
        taken and every connection is kept. Under systemd (NOTIFY_SOCKET) it says READY=1 once \
        it listens and STOPPING=1 when it drains; $STATE_DIRECTORY is its data directory unless \
        store.directory is set.
        """)

    @Option(help: "Configuration file (JSON); see Config/scrollsync.json.")
    var config: String?

    // Each flag's help and key come from the settings table (`Settings.all`).
    @Option(flag: "host") var host: String?
    @Option(flag: "port") var port: Int?
    @Option(flag: "tls-cert") var tlsCert: String?
    @Option(flag: "tls-key") var tlsKey: String?
    @Flag(flag: "no-echo") var noEcho = false
    @Option(flag: "loops") var loops: Int?
    @Option(flag: "handshake-timeout") var handshakeTimeout: Int?
    @Option(flag: "idle-timeout") var idleTimeout: Int?
    @Option(flag: "shutdown-grace") var shutdownGrace: Double?
    @Option(flag: "max-connections") var maxConnections: Int?
    @Option(flag: "max-connections-per-address") var maxConnectionsPerAddress: Int?
    @Option(flag: "max-rooms") var maxRooms: Int?
    @Option(flag: "max-members") var maxMembers: Int?
    @Option(flag: "room-creations") var roomCreations: Int?
    @Option(flag: "scroll-rate") var scrollRate: Double?
    @Option(flag: "origin") var origin: [String] = []
    @Flag(flag: "require-keys") var requireKeys = false
    @Option(flag: "room-idle") var roomIdle: Int?
    @Flag(flag: "no-conflation") var noConflation = false
    @Option(flag: "data-dir") var dataDir: String?
    @Flag(flag: "in-memory") var inMemory = false
    @Option(flag: "redis") var redis: String?
    @Flag(flag: "redis-cluster") var redisCluster = false
    @Option(flag: "log-level") var logLevel: String?
    @Flag(flag: "log-json") var logJSON = false

    /// The flags given, as configuration keys and values.
    var overrides: [(key: String, value: JSON)] { settingOverrides(of: self) }

    func run() throws {
        let configuration: ServerConfiguration
        do {
            configuration = try loadConfiguration(file: config, flags: overrides)
        } catch {
            logError("configuration: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        // Before any thread starts (the log writer's is the first): every thread inherits this
        // mask, so HUP, INT and TERM reach only the sigwait below, never a thread whose default
        // action would end the process, and one that arrives during a reload waits for it.
        let signals = blockTerminationSignals()
        blockSignal(SIGHUP)  // a reload, not the end (its default action)
        let output = LogOutput()
        LoggingSystem.bootstrap { _ in
            LineLogHandler(output: output, level: configuration.log.level.loggerLevel, json: configuration.log.json)
        }
        let logger = Logger(label: "scrollsync")
        raiseDescriptorLimit()
        let server: Server
        do {
            server = try Server(configuration: configuration, logger: logger)
        } catch {
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            output.flush()
            throw ExitCode(error is ConfigurationError ? 78 : 1)
        }
        logger.info("serving \(server.url)", metadata: [
            "url": "\(server.url)", "rooms": "\(server.url)/rooms/NAME", "echo": "\(configuration.echoEnabled)",
            "store": "\(server.redisShards.isEmpty ? configuration.dataDirectory ?? "memory only" : "redis " + server.redisShards.map { "\($0.endpoint)" }.joined(separator: ","))",
        ])
        let systemd = SystemdNotifier()
        systemd?.send("READY=1\nSTATUS=serving \(server.url)")
        var either = signals
        sigaddset(&either, SIGHUP)
        while waitForSignal(either) == SIGHUP {
            systemd?.send("RELOADING=1\nMONOTONIC_USEC=\(monotonicNanoseconds() / 1000)")
            reload(server, output: output, logger: logger)
            systemd?.send("READY=1\nSTATUS=serving \(server.url)")
        }
        systemd?.send("STOPPING=1\nSTATUS=draining")
        let open = server.counters.connectionsOpen.load(ordering: .relaxed)
        logger.notice("shutting down", metadata: ["connections": "\(open)", "graceSeconds": "\(configuration.shutdownGraceSeconds)"])
        let drained = server.shutdownGracefully(grace: configuration.shutdownGraceSeconds) { signalPending(signals) }
        logger.notice(drained ? "all connections closed; bye" : "grace period over or second signal; exiting")
        output.flush()
    }
}

extension Serve {
    /// SIGHUP: the configuration read again as at start (the file, the environment, these
    /// flags); what may change while serving is taken, the rest is named as needing a restart.
    /// A configuration or certificate that does not load is refused: the running one stays.
    func reload(_ server: Server, output: LogOutput, logger: Logger) {
        let configuration: ServerConfiguration
        do {
            configuration = try loadConfiguration(file: config, flags: overrides)
        } catch {
            logger.error("reload refused; the running configuration stays", metadata: ["error": "\(error)"])
            return
        }
        let report = server.reload(configuration)
        output.level = configuration.log.level.loggerLevel
        if let refused = report.certificateRefused {
            logger.error("reload: the new certificate is refused; the old one stays", metadata: ["error": "\(refused)"])
        }
        if !report.needRestart.isEmpty {
            logger.warning("reload: these settings changed but take effect only after a restart", metadata: ["settings": "\(report.needRestart.joined(separator: ","))"])
        }
        logger.notice("reloaded", metadata: [
            "changed": "\(report.applied.isEmpty ? "-" : report.applied.joined(separator: ","))",
            "certificate": "\(report.certificateReloaded ? "read again" : report.certificateRefused != nil ? "kept the old one" : "none")",
            "connections": "\(server.counters.connectionsOpen.load(ordering: .relaxed))",
        ])
    }
}

/// Defaults, then systemd's `$STATE_DIRECTORY` as the data directory, then the file (`file` or
/// SCROLLSYNC_CONFIG), then SCROLLSYNC_… variables, then `flags`.
func loadConfiguration(file: String?, flags: [(key: String, value: JSON)],
                       environment: [String: String] = ProcessEnvironment.all) throws(ConfigurationError) -> ServerConfiguration {
    var configuration = ServerConfiguration()
    if let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first, !state.isEmpty {
        configuration.dataDirectory = String(state)
    }
    if let path = file ?? environment["SCROLLSYNC_CONFIG"] {
        let text: String
        do {
            // A regular file only: a FIFO would hang the start, or a reload with every signal waiting behind it.
            text = String(decoding: try readRegularFile(path, atMost: 16 << 20), as: UTF8.self)
        } catch {
            throw ConfigurationError("\(path): cannot read: \(error)")
        }
        try Settings.apply(try Settings.fileValues(text, source: path), to: &configuration, source: path)
    }
    try Settings.apply(try Settings.environmentValues(environment), to: &configuration, source: "environment")
    try Settings.apply(flags, to: &configuration, source: "command line")
    try Settings.validate(configuration)
    try Settings.checkResources(configuration)
    return configuration
}

/// Lifts the soft descriptor limit to the hard one: each connection needs a descriptor.
func raiseDescriptorLimit() {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}

/// Blocks SIGINT and SIGTERM in this thread and the threads it starts.
func blockTerminationSignals() -> sigset_t {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    return signals
}

/// Waits for one of `signals`.
func waitForTermination(_ signals: sigset_t) {
    _ = waitForSignal(signals)
}

/// Waits for one of `signals` and says which.
func waitForSignal(_ signals: sigset_t) -> Int32 {
    var signals = signals
    var received: Int32 = 0
    sigwait(&signals, &received)
    return received
}

/// Blocks `signal` in this thread and the threads it starts (its default action would end
/// the process: SIGHUP's does).
@discardableResult
func blockSignal(_ signal: Int32) -> sigset_t {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, signal)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    return signals
}

/// Whether one of `signals` has arrived (without waiting).
func signalPending(_ signals: sigset_t) -> Bool {
    var signals = signals
    var zero = timespec()
    return sigtimedwait(&signals, nil, &zero) > 0
}

/// An error, in the one form every command uses (`scrollsync: error: …`), on standard error.
func logError(_ message: String) {
    log("error: \(message)", to: STDERR_FILENO)
}

/// One line on standard output (or `fd`), written at once (no stdio buffering).
func log(_ line: String, to fd: Int32 = STDOUT_FILENO) {
    let text = Array("scrollsync: \(SafeText.display(line))\n".utf8)  // a line may quote a server's reason
    writeAll(fd, text)
}
