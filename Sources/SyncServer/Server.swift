import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// A running ScrollSync server: event loops, listeners, endpoints.
public final class Server: Sendable {
    public let configuration: ServerConfiguration
    /// The port actually bound (useful with port 0).
    public let port: Int
    /// The rooms this server holds.
    public let hub: LocalRoomHub
    public let counters = ServerCounters()
    private let group: EventLoopGroup

    /// Binds and starts serving.
    public init(configuration: ServerConfiguration) throws {
        self.configuration = configuration
        var tls: TLSContext?
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            tls = try TLSContext(certificateChainFile: certificate, privateKeyFile: key)
        }
        group = try EventLoopGroup(count: configuration.loops ?? EventLoopGroup.coreCount)
        hub = LocalRoomHub(loops: group.loops, options: configuration.rooms)
        var endpoints: [any WebSocketEndpoint] = [RoomEndpoint(hub: hub)]
        if configuration.echoEnabled { endpoints.append(EchoEndpoint(limits: configuration.echoLimits)) }
        let router = Router(configuration: configuration, endpoints: endpoints,
                            httpEndpoints: [HealthEndpoint(), MetricsEndpoint(counters: counters, hub: hub)], loops: group.loops.count)
        let counters = counters
        port = try group.listen(host: configuration.host, port: configuration.port, tls: tls) { channel in
            WebSocketPeer(channel: channel, router: router, counters: counters)
        }
        group.start()
    }

    /// The URL clients use, e.g. `ws://127.0.0.1:8080`.
    public var url: String {
        let scheme = configuration.tlsCertificateFile == nil ? "ws" : "wss"
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(scheme)://\(host):\(port)"
    }

    /// Stops the loops and drops every connection.
    public func shutdown() { group.shutdown() }

    /// Stops accepting, sends every client close 1001 ("going away"), and waits for the
    /// connections to finish closing, at most `grace` seconds; then stops the loops.
    /// `interrupted` is polled while waiting: when it answers true, stop at once.
    /// Returns true when every connection closed within the grace period.
    @discardableResult
    public func shutdownGracefully(grace: Double, interrupted: () -> Bool = { false }) -> Bool {
        group.beginShutdown()
        let deadline = monotonicNanoseconds() + UInt64(grace * 1e9)
        var drained = false
        while monotonicNanoseconds() < deadline && !interrupted() {
            if counters.connectionsOpen.load(ordering: .relaxed) == 0 { drained = true; break }
            usleep(20_000)
        }
        group.shutdown()
        return drained
    }
}
