import Foundation
import RedisClient
import RoomKit
import Synchronization
import Testing
import Transport
@testable import Cluster

/// `SimScripts` is a second copy of the Lua scripts (docs/cluster.md §8): the same seeded
/// sequence of script calls runs on a real `redis-server` and on `SimRedis`, and every reply,
/// every published message and the room's keys after each call must be the same, so the copy
/// cannot drift from the Lua silently.
@Suite("SimScripts against redis-server")
struct SimScriptsDifferentialTests {
    static let hash = "scrollsync:{d}", lease = "scrollsync:{d}:lease", nodes = "scrollsync:{d}:nodes"
    static let channel = "scrollsync:{d}", count = "scrollsync:{d}:count:k"
    /// A second room's, for write-backs of several rooms in one call (its lease set by `SET`).
    static let hash2 = "scrollsync:{d}:2", lease2 = "scrollsync:{d}:2:lease"

    /// One real connection, used from the test's thread: each command waits for its reply.
    final class Real: @unchecked Sendable {
        let group: EventLoopGroup
        let commands: RedisConnection
        let subscriber: RedisConnection
        /// Connections up, and messages heard on the channel (written on the loop).
        final class Shared: @unchecked Sendable {
            let ready = Atomic(0)
            let heard = Mutex<[[UInt8]]>([])
        }
        let shared = Shared()

        init(url: String) throws {
            group = try EventLoopGroup(count: 1)
            let endpoint = try RedisEndpoint(url: url)
            commands = RedisConnection(endpoint: endpoint, loop: group.loops[0])
            let shared = shared
            subscriber = RedisConnection(endpoint: endpoint, loop: group.loops[0],
                                         role: .subscriber(sharded: false) { _, payload in shared.heard.withLock { $0.append(payload) } })
            group.start()
            group.loops[0].execute { [self] in
                for connection in [commands, subscriber] {
                    connection.onStatus = { [shared] up in if up { shared.ready.add(1, ordering: .relaxed) } }
                    connection.start()
                }
            }
        }

        /// Starts `body` on the loop and waits (at most 10 s) for what it hands back.
        func onLoop<T: Sendable>(_ body: @escaping @Sendable (@escaping @Sendable (T) -> Void) -> Void) -> T? {
            let answer = Mutex<T?>(nil)
            let done = DispatchSemaphore(value: 0)
            group.loops[0].execute {
                body { value in
                    answer.withLock { $0 = value }
                    done.signal()
                }
            }
            _ = done.wait(timeout: .now() + 10)
            return answer.withLock { $0 }
        }

        func send(_ arguments: [[UInt8]]) -> RedisReply {
            onLoop { [self] reply in commands.send(arguments, reply: reply) } ?? .error("no reply within 10 s")
        }

        func subscribe(_ channel: String) -> Bool {
            onLoop { [self] confirmed in subscriber.subscribe(channel, confirmed: confirmed) } ?? false
        }

        func stop() {
            let done = DispatchSemaphore(value: 0)
            group.loops[0].execute { [self] in
                commands.stop()
                subscriber.stop()
                done.signal()
            }
            _ = done.wait(timeout: .now() + 10)
            group.shutdown()
        }
    }

    /// A random script call, as the engine makes them (arguments in the engine's order).
    static func call(_ random: inout SimRandom) -> [[UInt8]] {
        let sessions = ["", "aaaa000000000001", "bbbb000000000002"]
        func session() -> String { sessions[random.below(sessions.count)] }
        func suffix() -> String { #","offset":\#(random.below(500)),"by":"\#(session())"}"# }
        func message() -> String { #"{"type":"driver","driver":"\#(session())","name":"n\#(random.below(3))"}"# }
        func document() -> String { random.chance(0.3) ? "" : #"{"type":"document","text":"doc \#(random.below(3))"}"# }
        let long = "600000"  // no key expires during a run (the two clocks differ)
        // A `seq` base from the clock (15 digits here: Lua writes numbers of more than 14 with an
        // exponent unless told otherwise), or a small one.
        func base() -> String { random.chance(0.8) ? String(795_886_061_448_000 + random.below(1000)) : String(random.below(3000)) }
        // A merging node's `seq`: above the hash's at times, so that its state goes in as a base.
        func localSeq() -> String { random.chance(0.4) ? String(795_886_061_448_000 + random.below(3000)) : String(random.below(3000)) }
        let text: [String]
        switch random.below(11) {
        case 0: text = ["EVAL", Scripts.snapshot, "3", hash, lease, nodes, base(), long]
        case 1: text = ["EVAL", Scripts.scroll, "2", hash, lease, session(), suffix(), channel, "", random.chance(0.5) ? base() : String(random.below(3000))]
        case 2:
            // One to three rooms' states, either room's, the same room twice at times (in order).
            let rooms = (0...random.below(3)).map { _ in random.chance(0.5) ? (hash, lease) : (hash2, lease2) }
            text = ["EVAL", Scripts.writeBack, String(2 * rooms.count)] + rooms.flatMap { [$0.0, $0.1] }
                + rooms.flatMap { _ in [random.chance(0.2) ? base() : String(random.below(3000)), suffix(), session()] }
        case 3, 4:
            let modes = ["take", "claim", "inherit", "lapse", "release"]
            text = ["EVAL", Scripts.control, "2", hash, lease, modes[random.below(modes.count)], session(), "n",
                    session(), long, long, channel, message(), ""]
        case 5: text = ["EVAL", Scripts.setAndPublish, "1", hash, random.chance(0.5) ? "doc" : "fkey", "v\(random.below(3))",
                        document(), channel, long, ""]
        case 6: text = random.chance(0.5) ? ["EVAL", Scripts.lease, "2", hash, lease]
            : ["EVAL", Scripts.bindKey, "1", hash, "key\(random.below(2))", channel, #"{"type":"key","record":"k"}"#, ""]
        case 7: text = random.chance(0.7) ? ["EVAL", Scripts.take, "1", count, "3", long] : ["EVAL", Scripts.giveBack, "1", count]
        case 8, 9:
            text = ["EVAL", Scripts.reconcile, "3", hash, lease, nodes, session(), "n", localSeq(),
                    random.chance(0.2) ? "" : suffix(), channel, long, long, message(), document(),
                    random.chance(0.5) ? "" : "key\(random.below(2))", random.chance(0.5) ? "" : "fk\(random.below(2))",
                    "", "", "", base(), random.chance(0.5) ? "" : suffix(), #"{"type":"access","followKey":"fk"}"#, "",
                    #"{"type":"key","record":"k"}"#, ""]
        default: text = random.chance(0.5) ? ["HSET", nodes, "node\(random.below(2))", "1 2 0 \(random.below(1000))"]
            : ["SET", lease2, session()]
        }
        return text.map { Array($0.utf8) }
    }

    /// The keys a script may touch, as both hold them.
    static func keys(_ read: ([[UInt8]]) -> RedisReply) -> [String: RedisReply] {
        [hash: read([Array("HGETALL".utf8), Array(hash.utf8)]), nodes: read([Array("HGETALL".utf8), Array(nodes.utf8)]),
         lease: read([Array("GET".utf8), Array(lease.utf8)]), count: read([Array("GET".utf8), Array(count.utf8)]),
         hash2: read([Array("HGETALL".utf8), Array(hash2.utf8)]), lease2: read([Array("GET".utf8), Array(lease2.utf8)])]
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func theSameCallsGiveTheSameRepliesMessagesAndKeys(seed: UInt64) throws {
        let server = try RedisServer()
        let real = try Real(url: server.url)
        defer { real.stop() }
        #expect(eventually(timeout: 15) { real.shared.ready.load(ordering: .relaxed) == 2 }, "both connections reached redis-server")
        #expect(real.subscribe(Self.channel))
        let sim = SimRedis(loop: try EventLoop.embedded(), seed: seed)
        sim.published = []
        var random = SimRandom(seed: seed)
        for step in 0..<400 {
            let call = Self.call(&random)
            let name = String(decoding: call[1].prefix(40), as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
            let (expected, got) = (real.send(call), sim.execute(call))
            try #require(expected == got, "step \(step) (\(name)): redis-server \(expected), SimScripts \(got)")
            let readSim: ([[UInt8]]) -> RedisReply = { command in
                let key = String(decoding: command[1], as: UTF8.self)
                return command[0] == Array("GET".utf8) ? (sim.get(key).map(RedisReply.string) ?? .null) : sim.hgetall(key)
            }
            let (realKeys, simKeys) = (Self.keys(real.send), Self.keys(readSim))
            try #require(realKeys == simKeys, "step \(step) (\(name)): keys differ: redis-server \(realKeys), SimScripts \(simKeys)")
        }
        let messages = sim.published ?? []
        #expect(eventually(timeout: 10) { real.shared.heard.withLock { $0.count } >= messages.count })
        #expect(real.shared.heard.withLock { $0 } == messages, "the published messages, in order")
    }
}
