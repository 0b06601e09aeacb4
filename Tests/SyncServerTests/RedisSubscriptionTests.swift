import Foundation
import RedisClient
import Synchronization
import Testing
import Transport

/// A subscriber connection against a real redis-server: subscriptions made and ended as
/// asked, whatever order the confirmations come back in.
@Suite("Redis subscriptions", .serialized)
struct RedisSubscriptionTests {
    final class Heard: @unchecked Sendable {
        let lock = Mutex<(messages: [String], confirmations: [String: Bool], redirects: Int)>(([], [:], 0))
        /// The connection, touched only on the loop's thread.
        var connection: RedisConnection?
    }

    func numsub(_ redis: RedisServer, _ channel: String) throws -> Int? {
        try run("redis-cli", ["-p", String(redis.port), "--raw", "pubsub", "numsub", channel]).output
            .split(separator: "\n").last.flatMap { Int($0) }
    }

    @Test func channelsAreSubscribedAndEndedAsAskedEvenBeforeTheServerConfirms() throws {
        let redis = try RedisServer()
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.shutdown() }
        let loop = group.loops[0]
        let heard = Heard()
        let endpoint = try RedisEndpoint(url: redis.url)
        loop.execute {
            let subscriber = RedisConnection(endpoint: endpoint, loop: loop, role: .subscriber(sharded: false) { channel, payload in
                heard.lock.withLock { $0.messages.append(String(decoding: channel, as: UTF8.self) + " " + String(decoding: payload, as: UTF8.self)) }
            })
            subscriber.onRedirect = { _ in heard.lock.withLock { $0.redirects += 1 } }
            subscriber.onStatus = { ready in
                guard ready else { return }
                subscriber.subscribe("kept") { ok in heard.lock.withLock { $0.confirmations["kept"] = ok } }
                // Ended before the server confirmed it.
                subscriber.subscribe("dropped") { ok in heard.lock.withLock { $0.confirmations["dropped"] = ok } }
                subscriber.unsubscribe("dropped")
            }
            subscriber.start()
            heard.connection = subscriber
        }
        #expect(eventually { heard.lock.withLock { $0.confirmations.count == 2 } }, "both were confirmed")
        #expect(eventually { (try? numsub(redis, "kept")) == 1 && (try? numsub(redis, "dropped")) == 0 },
                "one subscription is left: the one not ended")
        _ = try run("redis-cli", ["-p", String(redis.port), "publish", "kept", "hello"])
        _ = try run("redis-cli", ["-p", String(redis.port), "publish", "dropped", "nobody"])
        #expect(eventually { heard.lock.withLock { $0.messages == ["kept hello"] } }, "\(heard.lock.withLock { $0.messages })")

        // Ended and asked for again at once: subscribed at the end.
        loop.execute {
            guard let subscriber = heard.connection else { return }
            subscriber.unsubscribe("kept")
            subscriber.subscribe("kept") { ok in heard.lock.withLock { $0.confirmations["again"] = ok } }
        }
        #expect(eventually { heard.lock.withLock { $0.confirmations["again"] } == true })
        _ = try run("redis-cli", ["-p", String(redis.port), "publish", "kept", "again"])
        #expect(eventually { heard.lock.withLock { $0.messages.last } == "kept again" }, "\(heard.lock.withLock { $0.messages })")
        #expect(heard.lock.withLock { $0.redirects } == 0, "no subscription was ended by the server")
        let subscribed = Mutex<Set<String>>([])
        loop.execute { subscribed.withLock { $0 = heard.connection?.subscribed ?? [] } }
        #expect(eventually { subscribed.withLock { $0 } == ["kept"] })
        loop.execute { heard.connection?.stop() }
    }
}
