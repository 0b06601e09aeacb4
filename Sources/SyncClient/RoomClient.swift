import Dispatch
import ScrollModel
import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// A room connection's state.
public enum RoomStatus: Sendable, Equatable {
    case connecting(String)
    case connected(String)
    /// Disconnected; the next attempt starts in `retryIn` seconds.
    case waiting(retryIn: Double, reason: String)
    /// The server refuses this request for good (a 4xx other than 408 and 429, e.g. a bad
    /// room name): retrying cannot help, so the client has stopped.
    case refused(reason: String)
    case stopped
}


/// How a room connection connects and reconnects.
public struct RoomOptions: Sendable {
    /// Offer permessage-deflate.
    public var deflate = true
    /// Check the server's certificate (turn off only for self-signed test servers).
    public var verifyTLS = true
    /// Extra trust anchors for `wss://`.
    public var caFile: String?
    /// First retry after about 0.25 s, doubling with every failed attempt up to 8 s, each
    /// scaled by a random factor in 0.5…1 so that many clients do not return in step. An
    /// attempt counts as failed unless the room welcomed it and it stayed up `healthySeconds`
    /// (a connection closed right after its handshake does not reset the backoff).
    public var initialBackoff = 0.25
    public var maxBackoff = 8.0
    public var healthySeconds = 10.0
    public init() {}
}


/// A ScrollSync room connection that stays up: typed messages in and out, reconnect
/// with exponential backoff and jitter, rotation over several server URLs.
/// Safe to use from any thread; events arrive on the client's event loop. The package's
/// callback layer: programs use `RoomSession` (async/await).
package final class RoomClient: @unchecked Sendable {
    package typealias Status = RoomStatus
    package typealias Options = RoomOptions

    package enum Event: Sendable {
        case status(Status)
        case message(ServerEvent)
        /// The link's round trip (a ping answered), in milliseconds, every few seconds.
        case roundTrip(milliseconds: Int)
    }

    /// How often a connected client measures the link's round trip.
    static let pingIntervalNanoseconds: UInt64 = 5_000_000_000

    package let urls: [WebSocketURL]
    package let loop: EventLoop
    private let options: Options
    private let onEvent: @Sendable (Event) -> Void
    private let tls: TLSContext?
    // Loop-confined state.
    private var addresses: [SocketAddress?]
    /// URLs whose host name does not exist (the lookup said so, not that it failed for now).
    private var unresolvable = Set<Int>()
    private var client: WebSocketClient?
    private var attempt = 0
    private var urlIndex = 0
    private var stopped = false
    /// What runs once the client has stopped (`stop(completion:)`).
    private var whenStopped: [@Sendable () -> Void] = []
    /// When the room's `welcome` arrived on the current connection.
    private var welcomedAt: UInt64?

    /// - Parameter urls: one or more room URLs (`ws[s]://host:port/rooms/NAME?…`), tried in turn.
    package init(urls: [WebSocketURL], loop: EventLoop, options: Options = .init(), onEvent: @escaping @Sendable (Event) -> Void) throws {
        precondition(!urls.isEmpty, "at least one URL")
        self.urls = urls
        self.loop = loop
        self.options = options
        self.onEvent = onEvent
        tls = urls.contains(where: \.secure) ? try TLSContext(clientVerifying: options.verifyTLS, caFile: options.caFile) : nil
        // Resolve here, off the loop: name lookups block.
        addresses = urls.map { try? SocketAddress.resolve(host: $0.host, port: $0.port) }
    }

    /// Connects (and keeps reconnecting until `stop()`).
    package func start() { loop.execute { [self] in connect() } }

    /// Sends a message if connected; messages while disconnected are dropped (the
    /// `welcome` after a reconnect says where the room is). `completion` says (on the loop)
    /// whether it was handed to the connection.
    package func send(_ message: ClientMessage, completion: (@Sendable (Bool) -> Void)? = nil) {
        let bytes = message.encoded
        loop.execute { [self] in
            let sent = client?.send(text: bytes) ?? false
            completion?(sent)
        }
    }

    /// Closes for good; `completion` runs (on the loop) once the connection is closed.
    package func stop(completion: (@Sendable () -> Void)? = nil) {
        loop.execute { [self] in
            if let completion { whenStopped.append(completion) }
            guard !stopped || client != nil else { return finishStopping() }
            stopped = true
            client?.close(code: .goingAway, reason: "client leaving")
            if client == nil { finishStopping() }
        }
    }

    /// Stops, and waits until the connection is closed (its close frame gone), at most
    /// `timeout` seconds: for a program about to exit. Never on the client's loop.
    package func stopAndWait(timeout: Double = 2) {
        let done = DispatchSemaphore(value: 0)
        stop { done.signal() }
        _ = done.wait(timeout: .now() + timeout)
    }

    /// Says `stopped`, and runs what waits for it.
    private func finishStopping() {
        onEvent(.status(.stopped))
        let waiting = whenStopped
        whenStopped.removeAll()
        for completion in waiting { completion() }
    }

    private func connect() {
        guard !stopped else { return }
        let url = urls[urlIndex]
        guard let address = addresses[urlIndex] else {
            // Looked up again off this loop (lookups block); a name that does not exist on any
            // URL stops the client, one that fails for now is retried.
            let index = urlIndex
            let client = UncheckedClient(value: self)
            pthread_detach(spawnThread {
                let result = Result { () throws(SystemError) in try SocketAddress.resolve(host: url.host, port: url.port) }
                client.value.loop.execute { client.value.resolved(result, index: index) }
            })
            return
        }
        onEvent(.status(.connecting(url.redacted)))
        client = WebSocketClient.connect(
            url, address: address, on: loop, tls: tls, protocols: [protocolName], deflate: options.deflate,
            limits: .init(maxFrameSize: 4 << 20, maxMessageSize: 4 << 20)
        ) { [self] client, event in
            switch event {
            case .open:
                welcomedAt = nil
                onEvent(.status(.connected(url.description)))
                measureRoundTrip(client)
            case .pong(let payload):
                guard payload.count == 8 else { return }
                let sent = payload.loadUnaligned(as: UInt64.self)
                onEvent(.roundTrip(milliseconds: Int(elapsedNanoseconds(from: sent, to: monotonicNanoseconds()) / 1_000_000)))
            case .text(let bytes):
                guard let message = try? ServerEvent.decode(bytes) else { return }
                if case .welcome = message { welcomedAt = loop.now }
                onEvent(.message(message))
            case .binary:
                break
            case .closed(let code, let reason, let error):
                guard self.client === client else { return }
                self.client = nil
                if let welcomedAt, loop.now &- welcomedAt >= UInt64(options.healthySeconds * 1e9) { attempt = 0 }
                welcomedAt = nil
                if stopped {
                    finishStopping()
                } else if let refusal = client.refusal, (300..<500).contains(refusal.status), refusal.status != 408, refusal.status != 429 {
                    stopped = true
                    onEvent(.status(.refused(reason: error ?? "HTTP \(refusal.status)")))
                } else if let permanent = client.permanentFailure {
                    stopped = true
                    onEvent(.status(.refused(reason: permanent)))
                } else if code == .policyViolation {
                    // The room refused this session (a wrong presenter key): retrying cannot help.
                    stopped = true
                    onEvent(.status(.refused(reason: reason.isEmpty ? "closed by the server (1008: policy violation)" : reason)))
                } else {
                    retry(reason: error ?? "closed (\(code.rawValue)\(reason.isEmpty ? "" : ": \(reason)"))", atLeast: client.refusal?.retryAfter)
                }
            }
        }
    }

    /// Pings now and every `pingIntervalNanoseconds` while `client` is the connection; the
    /// payload is the send time, so the pong says the round trip.
    private func measureRoundTrip(_ client: WebSocketClient) {
        guard self.client === client, client.isOpen else { return }
        client.ping(withUnsafeBytes(of: monotonicNanoseconds()) { Array($0) })
        loop.schedule(after: Self.pingIntervalNanoseconds) { [self] in measureRoundTrip(client) }
    }

    /// Schedules the next attempt: the backoff for this attempt, or the server's `Retry-After`
    /// when it asked for longer.
    /// A lookup made off the loop came back: connect, or say why not. When no URL's host
    /// name exists, retrying cannot help: the client stops with the reason.
    private func resolved(_ result: Result<SocketAddress, SystemError>, index: Int) {
        guard !stopped else { return }
        let host = urls[index].host
        switch result {
        case .success(let address):
            addresses[index] = address
            connect()
        case .failure(let error) where error.errno == ENOENT:
            unresolvable.insert(index)
            guard unresolvable.count < urls.count else {
                stopped = true
                return onEvent(.status(.refused(reason: "host \(host) does not resolve: no such name (check the URL)")))
            }
            retry(reason: "host \(host) does not resolve: no such name")
        case .failure(let error):
            retry(reason: "cannot look up host \(host) now (\(error.description)); retrying")
        }
    }

    private func retry(reason: String, atLeast retryAfter: Int? = nil) {
        guard !stopped else { return }
        let backoff = min(options.maxBackoff, options.initialBackoff * Double(1 << min(attempt, 16))) * Double.random(in: 0.5...1)
        let delay = max(backoff, Double(min(retryAfter ?? 0, 3600)))
        attempt += 1
        urlIndex = (urlIndex + 1) % urls.count
        onEvent(.status(.waiting(retryIn: delay, reason: reason)))
        loop.schedule(after: UInt64(delay * 1e9)) { [self] in connect() }
    }
}

/// The client, handed to the thread that looks up its host (it goes back to its loop at once).
private struct UncheckedClient: @unchecked Sendable {
    let value: RoomClient
}
