import ArgumentParser
import SyncServer
#if canImport(Glibc)
import Glibc
#endif

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the ScrollSync server.")

    @Option(help: "Address to bind (0.0.0.0 or :: to serve other machines).")
    var host = "127.0.0.1"

    @Option(help: "TCP port; 0 picks a free one.")
    var port = 8080

    @Option(help: "PEM certificate chain; with --tls-key, serve wss://.")
    var tlsCert: String?

    @Option(help: "PEM private key for --tls-cert.")
    var tlsKey: String?

    @Flag(help: "Turn off the /echo conformance endpoint.")
    var noEcho = false

    @Option(help: "Event loops (threads); default one per core.")
    var loops: Int?

    @Option(help: "Seconds a client has to finish its upgrade request.")
    var handshakeTimeout = 10

    @Option(help: "Seconds of silence before a ping; twice this drops the client.")
    var idleTimeout = 30

    @Option(help: "Seconds SIGTERM/SIGINT waits for clients to close (close 1001) before exiting; a second signal exits at once.")
    var shutdownGrace = 10.0

    @Flag(help: "Presenters must give a key (key=…) to create or join a room.")
    var requireKeys = false

    @Option(help: "Seconds an empty room keeps its state before it is forgotten.")
    var roomIdle = 600

    @Flag(help: "Deliver every state to every follower instead of the newest (for throughput benchmarks).")
    var noConflation = false

    func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard handshakeTimeout > 0, idleTimeout > 0, roomIdle > 0, shutdownGrace >= 0 else { throw ValidationError("timeouts must be positive") }
    }

    func run() throws {
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.tlsCertificateFile = tlsCert
        configuration.tlsKeyFile = tlsKey
        configuration.echoEnabled = !noEcho
        configuration.loops = loops
        configuration.handshakeTimeoutSeconds = handshakeTimeout
        configuration.idleTimeoutSeconds = idleTimeout
        configuration.rooms.requirePresenterKey = requireKeys
        configuration.rooms.roomIdleSeconds = roomIdle
        configuration.rooms.conflation = !noConflation
        let signals = blockTerminationSignals()  // before any thread starts, so sigwait gets them
        let server = try Server(configuration: configuration)
        log("serving \(server.url) (rooms at \(server.url)/rooms/NAME\(noEcho ? "" : ", echo at /echo"))")
        waitForTermination(signals)
        let open = server.counters.connectionsOpen.load(ordering: .relaxed)
        log("shutting down: closing \(open) connection(s) with 1001, at most \(shutdownGrace) s")
        let drained = server.shutdownGracefully(grace: shutdownGrace) { signalPending(signals) }
        log(drained ? "all connections closed; bye" : "grace period over or second signal; exiting")
    }
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
    var signals = signals
    var received: Int32 = 0
    sigwait(&signals, &received)
}

/// Whether one of `signals` has arrived (without waiting).
func signalPending(_ signals: sigset_t) -> Bool {
    var signals = signals
    var zero = timespec()
    return sigtimedwait(&signals, nil, &zero) > 0
}

/// One line on standard output (or `fd`), written at once (no stdio buffering).
func log(_ line: String, to fd: Int32 = STDOUT_FILENO) {
    let text = Array("scrollsync: \(line)\n".utf8)
    text.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
}
