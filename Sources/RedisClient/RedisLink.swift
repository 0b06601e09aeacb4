/// What a client of Redis needs from one connection: commands whose replies come in the order
/// they were sent, channel subscriptions whose messages go to the handler the link was made
/// with, and word of the link's status. `RedisConnection` is the one over a socket; a test's
/// simulated Redis gives others (the seam the cluster simulation runs the real engine on).
/// Used from its loop's thread only.
public protocol RedisLink: AnyObject {
    /// Ready for commands (connected, authenticated, subscribed).
    var isReady: Bool { get }
    /// Why the last attempt failed, for logs and health checks.
    var lastError: String? { get }
    /// Hears `true` once the link is ready, `false` when it is lost.
    var onStatus: (Bool) -> Void { get set }
    /// Hears a channel the server moved (Redis Cluster) and every redirection a command got.
    var onRedirect: (_ channel: String?) -> Void { get set }
    /// Connects, and keeps reconnecting until `stop()`.
    func start()
    /// Disconnects for good; pending commands hear an error.
    func stop()
    /// Sends a command; without a connection the reply is an error at once.
    func send(_ arguments: [[UInt8]], reply: @escaping (RedisReply) -> Void)
    /// Subscribes to `channel`; `confirmed` hears whether the server confirmed it.
    func subscribe(_ channel: String, confirmed: @escaping (Bool) -> Void)
    /// Ends the subscription to `channel`.
    func unsubscribe(_ channel: String)
}

extension RedisLink {
    /// A command whose reply nobody waits for.
    public func send(_ arguments: [[UInt8]]) { send(arguments, reply: { _ in }) }

    /// A command of text arguments.
    public func send(_ arguments: [String], reply: @escaping (RedisReply) -> Void = { _ in }) {
        send(arguments.map { Array($0.utf8) }, reply: reply)
    }
}

/// Makes the links an engine talks to Redis through (nil where a `RedisConnection` is wanted):
/// one for commands, corked for `corkNanoseconds`, and subscribers.
public typealias RedisLinkFactory = (_ role: RedisConnection.Role, _ corkNanoseconds: UInt64?) -> any RedisLink
