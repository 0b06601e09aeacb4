import CHiredis
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// One connection to Redis, driven by an `EventLoop` through hiredis's async API: the
/// loop watches the socket and hiredis reads and writes it; nothing blocks.
///
/// It reconnects on its own (after `retryNanoseconds`), authenticates and selects the
/// database first, and, as a subscriber, subscribes again. A command that gets no reply
/// within `timeoutNanoseconds` drops the connection, so a stopped Redis is noticed.
/// Use from the loop's thread only.
public final class RedisConnection {
    public typealias Reply = (RedisReply) -> Void

    /// What the connection is for.
    public enum Role {
        case commands
        /// Pattern-subscribes to `patterns`; every message goes to the handler.
        case subscriber(patterns: [String], onMessage: (_ channel: [UInt8], _ payload: [UInt8]) -> Void)
    }

    public let endpoint: RedisEndpoint
    public let loop: EventLoop
    /// Hears `true` once the connection is ready for commands, `false` when it is lost.
    public var onStatus: (Bool) -> Void = { _ in }
    public var timeoutNanoseconds: UInt64 = 3_000_000_000
    public var retryNanoseconds: UInt64 = 500_000_000
    /// Ready for commands (connected, authenticated, database selected, subscribed).
    public private(set) var isReady = false
    /// Why the last attempt failed, for logs and health checks.
    public private(set) var lastError: String?

    private let role: Role
    /// The host as a numeric address: hiredis resolves names with a blocking getaddrinfo,
    /// which must not run on an event loop, so names are resolved here, once, at creation.
    private let address: String
    /// The server's address, resolved at creation (nil if that failed: resolved again, then).
    private let resolved: SocketAddress?
    /// For `rediss://`: hiredis 0.14 has no TLS, so it connects to this loopback forwarder,
    /// which carries the connection over TLS (made on first connect).
    private var forwarder: TLSForwarder?
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    private var watch: FileWatch?
    private var pending = 0
    private var lastProgress: UInt64 = 0
    private var stopped = false
    private var retryScheduled = false

    public init(endpoint: RedisEndpoint, loop: EventLoop, role: Role = .commands) {
        self.endpoint = endpoint
        self.loop = loop
        self.role = role
        resolved = try? SocketAddress.resolve(host: endpoint.host, port: endpoint.port)
        address = resolved?.numericHost ?? endpoint.host
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
    public func send(_ arguments: [String], reply: @escaping Reply = { _ in }) {
        send(arguments.map { Array($0.utf8) }, reply: reply)
    }

    public func send(_ arguments: [[UInt8]], reply: @escaping Reply = { _ in }) {
        guard isReady else { return reply(.error("redis unavailable: \(lastError ?? "not connected")")) }
        issue(arguments, reply: reply)
    }

    // MARK: Connection

    private func connect() {
        guard !stopped, context == nil else { return }
        lastProgress = loop.now
        var (host, port) = (address, endpoint.port)
        if endpoint.tls {
            do {
                let forwarder = try self.forwarder ?? makeForwarder()
                self.forwarder = forwarder
                (host, port) = ("127.0.0.1", forwarder.port)
            } catch {
                return retryLater("TLS: \(error)")
            }
        }
        guard let context = redisAsyncConnect(host, Int32(port)) else { return retryLater("out of memory") }
        if context.pointee.err != 0 {
            let message = String(cString: context.pointee.errstr)
            redisAsyncFree(context)
            return retryLater(message)
        }
        self.context = context
        forwarder?.expect(fd: scrollsync_redis_fd(context))
        let me = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.data = me
        do {
            watch = try loop.watch(fd: scrollsync_redis_fd(context)) { [weak self] readable, writable in
                self?.handle(readable: readable, writable: writable)
            }
        } catch {
            self.context = nil
            redisAsyncFree(context)
            return retryLater("\(error)")
        }
        scrollsync_redis_attach(context, me, { data in connection(data)?.watch?.update(readable: true) },
                                { data in connection(data)?.watch?.update(readable: false) },
                                { data in connection(data)?.watch?.update(writable: true) },
                                { data in connection(data)?.watch?.update(writable: false) },
                                { data in connection(data)?.releaseWatch() })
        redisAsyncSetConnectCallback(context) { context, status in
            connection(context?.pointee.data)?.connected(status == REDIS_OK, error: context.map { String(cString: $0.pointee.errstr) })
        }
        redisAsyncSetDisconnectCallback(context) { context, _ in
            guard let data = context?.pointee.data else { return }
            let message = context.flatMap { $0.pointee.err != 0 ? String(cString: $0.pointee.errstr) : nil }
            connection(data)?.disconnected(message ?? "connection closed")
        }
    }

    private func takeForwarderFailure() -> String? {
        defer { forwarder?.lastFailure = nil }
        return forwarder?.lastFailure
    }

    private func makeForwarder() throws -> TLSForwarder {
        let context = try TLSContext(clientVerifying: true, caFile: endpoint.caFile)
        let target = try resolved ?? SocketAddress.resolve(host: endpoint.host, port: endpoint.port)
        return try TLSForwarder(loop: loop, target: target, serverName: endpoint.host, context: context)
    }

    private func handle(readable: Bool, writable: Bool) {
        if readable, let context { redisAsyncHandleRead(context) }
        if writable, let context { redisAsyncHandleWrite(context) }
    }

    fileprivate func releaseWatch() {
        watch?.cancel()
        watch = nil
    }

    fileprivate func connected(_ ok: Bool, error: String?) {
        guard ok else {
            // hiredis frees the context after this callback.
            context = nil
            releaseWatch()
            return retryLater(takeForwarderFailure() ?? error ?? "connect failed")
        }
        var setup = [[String]]()
        if let password = endpoint.password { setup.append(["AUTH", password]) }
        if endpoint.database != 0 { setup.append(["SELECT", String(endpoint.database)]) }
        setup.append(["PING"])
        runSetup(setup[...])
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
        guard case .subscriber(let patterns, _) = role, let context else { return becomeReady() }
        var arguments = [Array("PSUBSCRIBE".utf8)] + patterns.map { Array($0.utf8) }
        withArguments(&arguments) { argc, argv, lengths in
            _ = redisAsyncCommandArgv(context, { context, reply, _ in
                connection(context?.pointee.data)?.subscriptionReply(reply.map { RedisReply(raw: $0.assumingMemoryBound(to: redisReply.self)) })
            }, nil, argc, argv, lengths)
        }
    }

    private func subscriptionReply(_ reply: RedisReply?) {
        guard case .subscriber(_, let onMessage) = role, let reply else { return }
        let parts = reply.elements
        switch parts.first?.text {
        case "psubscribe":
            lastProgress = loop.now
            if !isReady { becomeReady() }
        case "pmessage" where parts.count == 4:
            if case .string(let channel) = parts[2], case .string(let payload) = parts[3] { onMessage(channel, payload) }
        default:
            break
        }
    }

    private func becomeReady() {
        lastError = nil
        isReady = true
        onStatus(true)
    }

    fileprivate func disconnected(_ message: String) {
        // hiredis frees the context after this callback.
        context = nil
        releaseWatch()
        lost(message)
    }

    /// Closes the connection now (pending commands hear an error) and retries later.
    private func drop(_ message: String) {
        if let context {
            self.context = nil
            context.pointee.data = nil  // its callbacks must not find us while it is freed
            redisAsyncFree(context)
            releaseWatch()
        }
        lost(message)
    }

    private func lost(_ message: String) {
        let message = takeForwarderFailure() ?? message
        let wasReady = isReady
        isReady = false
        pending = 0
        lastError = message
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
        guard context != nil else { return }
        if isReady, pending == 0, case .commands = role { issue([Array("PING".utf8)]) { _ in } }
        guard pending > 0 || !isReady, loop.now - lastProgress > timeoutNanoseconds else { return }
        drop(isReady ? "no reply for \(timeoutNanoseconds / 1_000_000) ms" : "connect timed out")
    }

    // MARK: Commands

    private final class Callback {
        let reply: Reply
        init(_ reply: @escaping Reply) { self.reply = reply }
    }

    private func issue(_ arguments: [[UInt8]], reply: @escaping Reply) {
        guard let context else { return reply(.error("redis unavailable")) }
        let box = Unmanaged.passRetained(Callback(reply)).toOpaque()
        if pending == 0 { lastProgress = loop.now }
        pending += 1
        var arguments = arguments
        let status = withArguments(&arguments) { argc, argv, lengths in
            redisAsyncCommandArgv(context, { context, reply, privdata in
                guard let privdata else { return }
                let callback = Unmanaged<Callback>.fromOpaque(privdata).takeRetainedValue()
                let value = reply.map { RedisReply(raw: $0.assumingMemoryBound(to: redisReply.self)) } ?? .error("redis connection lost")
                connection(context?.pointee.data)?.replied()
                callback.reply(value)
            }, box, argc, argv, lengths)
        }
        if status != REDIS_OK {
            pending -= 1
            Unmanaged<Callback>.fromOpaque(box).release()
            reply(.error("redis unavailable"))
        }
    }

    fileprivate func replied() {
        pending = max(0, pending - 1)
        lastProgress = loop.now
    }
}

private func connection(_ data: UnsafeMutableRawPointer?) -> RedisConnection? {
    data.map { Unmanaged<RedisConnection>.fromOpaque($0).takeUnretainedValue() }
}

/// Calls `body` with C argument vectors for `arguments`.
private func withArguments<R>(_ arguments: inout [[UInt8]], _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R) -> R {
    let count = arguments.count
    let pointers = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(1, count))
    let lengths = UnsafeMutablePointer<Int>.allocate(capacity: max(1, count))
    defer {
        pointers.deallocate()
        lengths.deallocate()
    }
    // Contiguous copies that outlive the call (hiredis copies the arguments into its buffer).
    var storage = [UnsafeMutablePointer<UInt8>]()
    defer { storage.forEach { $0.deallocate() } }
    for (index, argument) in arguments.enumerated() {
        let copy = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, argument.count))
        argument.withUnsafeBufferPointer { if let base = $0.baseAddress { copy.initialize(from: base, count: argument.count) } }
        storage.append(copy)
        pointers[index] = UnsafeRawPointer(copy).assumingMemoryBound(to: CChar.self)
        lengths[index] = argument.count
    }
    return body(Int32(count), pointers, lengths)
}

extension RedisReply {
    init(raw: UnsafeMutablePointer<redisReply>) {
        let reply = raw.pointee
        switch reply.type {
        case REDIS_REPLY_STRING:
            self = .string(reply.str.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(reply.len))) } ?? [])
        case REDIS_REPLY_STATUS:
            self = .status(reply.str.map { String(cString: $0) } ?? "")
        case REDIS_REPLY_ERROR:
            self = .error(reply.str.map { String(cString: $0) } ?? "error")
        case REDIS_REPLY_INTEGER:
            self = .integer(Int(reply.integer))
        case REDIS_REPLY_ARRAY:
            self = .array((0..<Int(reply.elements)).compactMap { index in reply.element[index].map { RedisReply(raw: $0) } })
        default:
            self = .null
        }
    }
}
