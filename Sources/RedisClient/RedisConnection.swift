import Bytes
import COpenSSL
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// One connection to Redis (or Valkey) on a Transport `EventLoop`: RESP written and read
/// by `RESP`/`RESPDecoder` on a channel of the loop (TLS, for `rediss://`, through the
/// project's OpenSSL channel, the certificate chain and host name verified); nothing blocks.
///
/// Commands are pipelined: each is written at once and its reply handler waits its turn.
/// The connection greets with `HELLO 3` (RESP3, with `AUTH user password` in it) and falls
/// back to RESP2 and `AUTH` on a server without HELLO, then selects the database. It
/// reconnects on its own (after `retryNanoseconds`); a command that gets no reply within
/// `timeoutNanoseconds` drops the connection, so a stopped Redis is noticed. `EVAL` goes out
/// as `EVALSHA` once the script is known to the server, and again as `EVAL` if the server
/// answers NOSCRIPT. Use from the loop's thread only.
///
/// A subscriber subscribes to the channels it is asked for (`subscribe(_:confirmed:)`), with
/// `SSUBSCRIBE` on a Redis Cluster (sharded pub/sub), and forgets them when it reconnects: its
/// owner subscribes again to what it still needs.
public final class RedisConnection: RedisLink {
    public typealias Reply = (RedisReply) -> Void

    /// What the connection is for.
    public enum Role {
        case commands
        /// Subscribes to the channels asked for (`SSUBSCRIBE` when `sharded`); every message goes
        /// to the handler.
        case subscriber(sharded: Bool, onMessage: (_ channel: [UInt8], _ payload: [UInt8]) -> Void)
    }

    public let endpoint: RedisEndpoint
    public let loop: EventLoop
    /// Hears `true` once the connection is ready for commands, `false` when it is lost.
    public var onStatus: (Bool) -> Void = { _ in }
    /// Hears a channel the server unsubscribed this subscriber from (a Redis Cluster slot that
    /// moved to another node), and every `MOVED`/`ASK` redirection a command got.
    public var onRedirect: (_ channel: String?) -> Void = { _ in }
    public var timeoutNanoseconds: UInt64 = 3_000_000_000
    public var retryNanoseconds: UInt64 = 500_000_000
    /// Ready for commands (connected, authenticated, database selected, subscribed).
    public private(set) var isReady = false
    /// Why the last attempt failed, for logs and health checks.
    public private(set) var lastError: String?
    /// The protocol the server agreed to: 3 after HELLO 3, else 2.
    public private(set) var protocolVersion = 2

    private let role: Role
    /// The server's address, resolved at creation (names are resolved with a blocking
    /// getaddrinfo, which must not run on an event loop; nil if that failed: tried again).
    private var resolved: SocketAddress?
    private var tlsContext: TLSContext?
    /// The current connection's channel handler (nil between connections).
    private(set) var link: Link?
    private var decoder = RESPDecoder()
    /// Reply handlers in the order their commands were written.
    private var waiting: [Reply] = []
    private var nextReply = 0
    private var subscribing = false
    /// Channels subscribed to (confirmed by the server).
    public private(set) var subscribed: Set<String> = []
    /// Subscriptions asked for and not yet confirmed, in the order asked, with who waits.
    private var subscriptionsAsked: [(channel: String, confirmed: (Bool) -> Void)] = []
    /// Unsubscriptions asked for and not yet confirmed, by channel.
    private var unsubscribing: [String: Int] = [:]
    /// SHA-1s of the scripts this server has run for us since we connected.
    private var knownScripts: Set<String> = []
    private var lastProgress: UInt64 = 0
    private var stopped = false
    private var retryScheduled = false

    private var pending: Int { waiting.count - nextReply + subscriptionsAsked.count }

    /// Commands sent within this many nanoseconds of the first go out in one write, so that
    /// Redis reads, answers and publishes them in one pass (nil: at the end of each loop turn).
    /// Each costs Redis a wake-up, a read and a write of answers: the most of a plain
    /// command's cost when commands come one by one.
    public let corkNanoseconds: UInt64?
    private var corked: [UInt8] = []
    private var corkScheduled = false

    public init(endpoint: RedisEndpoint, loop: EventLoop, role: Role = .commands, corkNanoseconds: UInt64? = nil) {
        self.endpoint = endpoint
        self.loop = loop
        self.role = role
        self.corkNanoseconds = corkNanoseconds
        resolved = try? SocketAddress.resolve(host: endpoint.host, port: endpoint.port)
        loop.onTick { [weak self] in self?.checkTimeout() }
    }

    /// Connects (and keeps reconnecting until `stop()`).
    public func start() {
        stopped = false
        connect()
    }

    /// Disconnects for good; pending commands hear an error.
    public func stop() {
        stopped = true
        drop("stopped")
    }

    /// Sends a command. Without a connection the reply is an error at once.
    public func send(_ arguments: [[UInt8]], reply: @escaping Reply) {
        guard isReady else { return reply(.error("redis unavailable: \(lastError ?? "not connected")")) }
        guard arguments.count >= 3, arguments[0].count == 4, String(decoding: arguments[0], as: UTF8.self).uppercased() == "EVAL" else {
            return issue(arguments, reply: reply)
        }
        let sha = Self.sha1(arguments[1])
        guard knownScripts.contains(sha) else {
            return issue(arguments) { [weak self] answer in
                if !answer.isError { self?.knownScripts.insert(sha) }
                reply(answer)
            }
        }
        issue([Array("EVALSHA".utf8), Array(sha.utf8)] + arguments.dropFirst(2)) { [weak self] answer in
            guard case .error(let message) = answer, message.hasPrefix("NOSCRIPT"), let self else { return reply(answer) }
            // The server forgot it (SCRIPT FLUSH, a restart behind a proxy): send the script itself.
            self.knownScripts.remove(sha)
            self.issue(arguments, reply: reply)
        }
    }

    // MARK: Connection

    private func connect() {
        guard !stopped, link == nil else { return }
        lastProgress = loop.now
        decoder = RESPDecoder()
        knownScripts.removeAll()
        subscribing = false
        protocolVersion = 2
        do {
            let target = try resolved ?? SocketAddress.resolve(host: endpoint.host, port: endpoint.port)
            resolved = target
            var tls: TLSContext?
            if endpoint.tls {
                tls = try tlsContext ?? TLSContext(clientVerifying: true, caFile: endpoint.caFile)
                tlsContext = tls
            }
            let link = Link(owner: self)
            self.link = link
            let channel = try loop.connect(to: target, tls: tls, serverName: endpoint.host, verifyHostName: true) { _ in link }
            guard link.isOpen, self.link === link else { return }  // it failed already, and said so
            link.channel = channel
        } catch {
            link = nil
            return retryLater("\(error)")
        }
        greet()
    }

    /// HELLO 3 (with AUTH); on a server without it, AUTH alone and RESP2. Then SELECT, PING.
    private func greet() {
        var hello = ["HELLO", "3"]
        if let password = endpoint.password { hello += ["AUTH", endpoint.user ?? "default", password] }
        issue(hello.map { Array($0.utf8) }) { [weak self] reply in
            guard let self else { return }
            switch reply {
            case .error(let message) where message.hasPrefix("ERR unknown command") || message.hasPrefix("NOPROTO"):
                var setup = [[String]]()
                if let password = self.endpoint.password { setup.append(["AUTH"] + (self.endpoint.user.map { [$0] } ?? []) + [password]) }
                self.runSetup(setup[...] + self.afterHello())
            case .error(let message):
                self.drop("HELLO failed: \(message)")
            default:
                self.protocolVersion = 3
                self.runSetup(self.afterHello()[...])
            }
        }
    }

    private func afterHello() -> [[String]] {
        (endpoint.database != 0 ? [["SELECT", String(endpoint.database)]] : []) + [["PING"]]
    }

    private func runSetup(_ commands: ArraySlice<[String]>) {
        guard let command = commands.first else { return subscribeOrReady() }
        issue(command.map { Array($0.utf8) }) { [weak self] reply in
            guard let self else { return }
            if case .error(let message) = reply {
                self.drop("\(command[0]) failed: \(message)")
                return
            }
            self.runSetup(commands.dropFirst())
        }
    }

    private func subscribeOrReady() {
        // From here on every reply of a subscriber is a subscription's (in RESP3 a push, in RESP2 an array).
        if case .subscriber = role { subscribing = true }
        becomeReady()
    }

    /// Subscribes to `channel` (at once if it is already); `confirmed` hears true once the
    /// server confirmed, false if it refused or the connection was lost first.
    public func subscribe(_ channel: String, confirmed: @escaping (Bool) -> Void) {
        guard case .subscriber(let sharded, _) = role, isReady else { return confirmed(false) }
        if subscribed.contains(channel) { return confirmed(true) }
        let alreadyAsked = subscriptionsAsked.contains { $0.channel == channel }
        if subscriptionsAsked.isEmpty { lastProgress = loop.now }
        subscriptionsAsked.append((channel, confirmed))
        if !alreadyAsked { write([Array((sharded ? "SSUBSCRIBE" : "SUBSCRIBE").utf8), Array(channel.utf8)]) }
    }

    /// Ends the subscription to `channel` (one being asked for too).
    public func unsubscribe(_ channel: String) {
        guard case .subscriber(let sharded, _) = role, isReady,
              subscribed.remove(channel) != nil || subscriptionsAsked.contains(where: { $0.channel == channel }) else { return }
        unsubscribing[channel, default: 0] += 1
        write([Array((sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE").utf8), Array(channel.utf8)])
    }

    private func subscriptionReply(_ reply: RedisReply) {
        guard case .subscriber(_, let onMessage) = role else { return }
        if case .error(let message) = reply {
            // A subscription the server refused (e.g. MOVED: another node serves its slot).
            if message.hasPrefix("MOVED") || message.hasPrefix("ASK") { onRedirect(nil) }
            guard let refused = subscriptionsAsked.first?.channel else { return }
            settleSubscription(refused, confirmed: false)
            return
        }
        let parts = reply.elements
        switch parts.first?.text {
        case "message" where parts.count == 3, "smessage" where parts.count == 3:
            if case .string(let channel) = parts[1], case .string(let payload) = parts[2] { onMessage(channel, payload) }
        case "subscribe", "ssubscribe":
            if let channel = parts.count > 1 ? parts[1].text : nil { settleSubscription(channel, confirmed: true) }
        case "sunsubscribe", "unsubscribe":
            guard let channel = parts.count > 1 ? parts[1].text : nil else { break }
            if let asked = unsubscribing[channel] {
                unsubscribing[channel] = asked > 1 ? asked - 1 : nil
                // Unless it was asked for again since.
                if !subscriptionsAsked.contains(where: { $0.channel == channel }) { subscribed.remove(channel) }
            } else if subscribed.remove(channel) != nil {
                // One this subscriber did not ask to end: the server moved the channel's slot.
                onRedirect(channel)
            }
        default:
            break
        }
    }

    private func settleSubscription(_ channel: String, confirmed: Bool) {
        if confirmed { subscribed.insert(channel) }
        let settled = subscriptionsAsked.filter { $0.channel == channel }
        subscriptionsAsked.removeAll { $0.channel == channel }
        for waiter in settled { waiter.confirmed(confirmed) }
    }

    private func becomeReady() {
        lastError = nil
        isReady = true
        onStatus(true)
    }

    /// Bytes from the server: every complete reply goes to its handler, in order.
    func received(_ bytes: UnsafeRawBufferPointer) {
        decoder.append(bytes)
        do {
            while let item = try decoder.next() {
                lastProgress = loop.now
                if subscribing || item.isPush {
                    subscriptionReply(item.reply)
                    continue
                }
                guard nextReply < waiting.count else { return drop("a reply nobody asked for") }
                let reply = waiting[nextReply]
                nextReply += 1
                if nextReply == waiting.count {
                    waiting.removeAll(keepingCapacity: true)
                    nextReply = 0
                } else if nextReply >= 1024 && nextReply * 2 >= waiting.count {
                    // A pipeline that never empties must not keep every answered handler.
                    waiting.removeFirst(nextReply)
                    nextReply = 0
                }
                if case .error(let message) = item.reply, message.hasPrefix("MOVED ") || message.hasPrefix("ASK ") { onRedirect(nil) }
                reply(item.reply)
                if link == nil { return }  // the handler dropped the connection
            }
        } catch {
            drop("\(error)")
        }
    }

    func closed(_ reason: String) {
        link = nil
        lost(reason)
    }

    /// Closes the connection now (pending commands hear an error) and retries later.
    private func drop(_ message: String) {
        if let link {
            self.link = nil
            link.owner = nil
            link.channel?.abort()
        }
        lost(message)
    }

    private func lost(_ message: String) {
        let wasReady = isReady
        isReady = false
        corked.removeAll()  // for the lost connection: their replies fail below
        lastError = message
        let orphans = waiting[nextReply...]
        waiting.removeAll()
        nextReply = 0
        let unconfirmed = subscriptionsAsked
        subscriptionsAsked.removeAll()
        subscribed.removeAll()
        unsubscribing.removeAll()
        for reply in orphans { reply(.error("redis connection lost: \(message)")) }
        for waiter in unconfirmed { waiter.confirmed(false) }
        if wasReady { onStatus(false) }
        retryLater(message)
    }

    private func retryLater(_ message: String) {
        lastError = message
        guard !stopped, !retryScheduled else { return }
        retryScheduled = true
        loop.schedule(after: retryNanoseconds) { [weak self] in
            guard let self else { return }
            self.retryScheduled = false
            self.connect()
        }
    }

    /// Once a tick: a command connection with nothing in flight sends PING, so a Redis that
    /// stopped answering (frozen, or its machine gone) is noticed within the timeout.
    private func checkTimeout() {
        guard link != nil else { return }
        if isReady, pending == 0, case .commands = role { issue([Array("PING".utf8)]) { _ in } }
        guard pending > 0 || !isReady, loop.now - lastProgress > timeoutNanoseconds else { return }
        drop(isReady ? "no reply for \(timeoutNanoseconds / 1_000_000) ms" : "connect timed out")
    }

    // MARK: Commands

    private func issue(_ arguments: [[UInt8]], reply: @escaping Reply) {
        guard link != nil else { return reply(.error("redis unavailable")) }
        if pending == 0 { lastProgress = loop.now }
        waiting.append(reply)
        write(arguments)
    }

    private func write(_ arguments: [[UInt8]]) {
        guard let corkNanoseconds else {
            _ = link?.channel?.enqueue(SharedBytes(RESP.encode(arguments)))
            return
        }
        corked += RESP.encode(arguments)
        guard !corkScheduled else { return }
        corkScheduled = true
        loop.schedule(after: corkNanoseconds) { [weak self] in self?.uncork() }
    }

    private func uncork() {
        corkScheduled = false
        guard !corked.isEmpty else { return }
        _ = link?.channel?.enqueue(SharedBytes(corked))
        corked.removeAll(keepingCapacity: true)
    }

    /// A script's SHA-1 in hex, as EVALSHA names it.
    static func sha1(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_sha1(), nil) }
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: digest.prefix(Int(length)).flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }, as: UTF8.self)
    }
}
