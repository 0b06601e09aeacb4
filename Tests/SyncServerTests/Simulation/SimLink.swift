import RedisClient
import Transport

/// One node's connection to the simulated Redis: what the node sends reaches Redis after a
/// delay and runs there atomically; replies and channel messages come back after a delay, each
/// direction in order (as over TCP). A link can be frozen (its node paused: nothing moves until
/// then), dropped (its replies lost, its subscriptions gone; it reconnects 0.5 s later, as
/// `RedisConnection` does) or stopped.
final class SimLink: RedisLink {
    unowned let redis: SimRedis
    let node: Int
    let role: RedisConnection.Role
    var isReady = false
    var lastError: String?
    var onStatus: (Bool) -> Void = { _ in }
    var onRedirect: (String?) -> Void = { _ in }
    private(set) var started = false
    private var stopped = false
    /// Bumped by each drop: what was on its way for an older connection is lost (but for
    /// `delivered` ones: what they sent still reaches Redis).
    private var generation = 0
    private var delivered: Set<Int> = []
    /// Nothing is delivered before this (loop time): the node is paused.
    var frozenUntil: UInt64 = 0
    private var lastToRedis: UInt64 = 0
    private var lastFromRedis: UInt64 = 0
    /// Replies of commands Redis has not answered yet, in order (an error each when dropped).
    private var waiting: [Int: (RedisReply) -> Void] = [:]
    private var nextCommand = 0
    private var subscriptionWaiters: [(channel: String, confirmed: (Bool) -> Void)] = []

    init(redis: SimRedis, node: Int, role: RedisConnection.Role) {
        self.redis = redis
        self.node = node
        self.role = role
    }

    private var onMessage: ((_ channel: [UInt8], _ payload: [UInt8]) -> Void)? {
        if case .subscriber(_, let onMessage) = role { onMessage } else { nil }
    }

    func start() {
        stopped = false
        started = true
        connect()
    }

    func stop() {
        stopped = true
        drop("stopped")
    }

    private func connect() {
        guard !stopped, !isReady else { return }
        let connection = generation
        let frozen = max(frozenUntil, redis.frozenUntil)
        redis.loop.schedule(after: max(redis.random.next(in: redis.delay), frozen > redis.loop.now ? frozen - redis.loop.now : 0)) { [weak self] in
            guard let self, self.generation == connection, !self.stopped, !self.isReady else { return }
            self.lastError = nil
            self.isReady = true
            self.onStatus(true)
        }
    }

    /// The connection is lost: replies on their way fail, subscriptions end; it reconnects
    /// after 0.5 s.
    func drop(_ reason: String, sentStillArrives: Bool = false) {
        if sentStillArrives { delivered.insert(generation) }
        generation += 1
        let wasReady = isReady
        isReady = false
        lastError = reason
        for channel in Array(redis.subscribers.keys) { redis.subscribers[channel]?.removeAll { $0 === self } }
        let orphans = waiting.sorted { $0.key < $1.key }.map(\.value)
        waiting.removeAll()
        let unconfirmed = subscriptionWaiters
        subscriptionWaiters.removeAll()
        for reply in orphans { reply(.error("redis connection lost: \(reason)")) }
        for waiter in unconfirmed { waiter.confirmed(false) }
        if wasReady { onStatus(false) }
        guard !stopped else { return }
        let connection = generation
        redis.loop.schedule(after: 500_000_000) { [weak self] in
            guard let self, self.generation == connection else { return }
            self.connect()
        }
    }

    func send(_ arguments: [[UInt8]], reply: @escaping (RedisReply) -> Void) {
        guard isReady else { return reply(.error("redis unavailable: \(lastError ?? "not connected")")) }
        let number = nextCommand
        nextCommand += 1
        waiting[number] = reply
        toRedis { [self] in
            let answer = redis.execute(arguments)
            redis.log("node \(node) ran \(SimRedis.describe(arguments)) -> \(answer)")
            fromRedis { [self] in waiting.removeValue(forKey: number)?(answer) }
        }
    }

    func subscribe(_ channel: String, confirmed: @escaping (Bool) -> Void) {
        guard isReady, onMessage != nil else { return confirmed(false) }
        subscriptionWaiters.append((channel, confirmed))
        toRedis { [self] in
            if redis.subscribers[channel]?.contains(where: { $0 === self }) != true { redis.subscribers[channel, default: []].append(self) }
            fromRedis { [self] in
                let settled = subscriptionWaiters.filter { $0.channel == channel }
                subscriptionWaiters.removeAll { $0.channel == channel }
                for waiter in settled { waiter.confirmed(true) }
            }
        }
    }

    func unsubscribe(_ channel: String) {
        guard isReady else { return }
        toRedis { [self] in redis.subscribers[channel]?.removeAll { $0 === self } }
    }

    /// A message Redis published on a channel this link subscribed to.
    func push(channel: String, _ message: [UInt8]) {
        redis.log("node \(node) hears \(String(decoding: message.prefix(400), as: UTF8.self))")
        fromRedis { [self] in onMessage?(Array(channel.utf8), message) }
    }

    /// The node gave up waiting for a stopped Redis (no reply within its timeout).
    func timedOut() {
        guard isReady else { return }
        drop("no reply for 3000 ms", sentStillArrives: true)
    }

    /// Runs `body` in Redis after this link's delay, in order, unless the link dropped first.
    private func toRedis(_ body: @escaping () -> Void) {
        let connection = generation
        lastToRedis = redis.deliveryTime(after: lastToRedis, frozenUntil: frozenUntil)
        redis.loop.schedule(after: lastToRedis - redis.loop.now) { [weak self] in
            guard let self, self.generation == connection || self.delivered.contains(connection) else { return }
            body()
        }
    }

    /// Runs `body` on the node after this link's delay, in order, unless the link dropped first.
    private func fromRedis(_ body: @escaping () -> Void) {
        let connection = generation
        lastFromRedis = redis.deliveryTime(after: lastFromRedis, frozenUntil: frozenUntil)
        redis.loop.schedule(after: lastFromRedis - redis.loop.now) { [weak self] in
            guard let self, self.generation == connection else { return }
            body()
        }
    }
}
