@testable import Cluster
import RedisClient
import RoomKit
import TestSupport
import Foundation
import Logging
import Transport

/// Redis as the cluster simulation needs it, on the simulation's embedded loop and clock: the
/// commands and scripts the engine sends (each script's semantics written in Swift, run
/// atomically: `SimScripts`), keys that expire on the loop's clock, pub/sub in per-channel
/// publish order, and links (`SimLink`) whose deliveries are delayed, frozen (a paused node),
/// dropped (a lost connection) or emptied (Redis restarted empty) when the simulation says.
final class SimRedis {
    let loop: EventLoop
    var random: SimRandom
    /// Keys: strings and hashes (hashes keep insertion order, as a small Redis hash does).
    var strings: [String: [UInt8]] = [:]
    var hashes: [String: [(field: String, value: [UInt8])]] = [:]
    /// When a key expires (loop time).
    var expiry: [String: UInt64] = [:]
    /// Subscribers by channel, in the order they subscribed.
    var subscribers: [String: [SimLink]] = [:]
    var links: [SimLink] = []
    /// Delivery delay of each message, either way (nanoseconds).
    var delay: ClosedRange<UInt64> = 20_000...400_000
    /// Every message published, in order, when not nil (`SimScriptsDifferentialTests`).
    var published: [[UInt8]]?
    /// I4: a room hash's `seq` went back while the hash existed.
    var hashSeqDecreases: [String] = []
    /// Calls of the write-back script (`Scripts.writeBack`), however many rooms each wrote.
    var writeBackCalls = 0
    /// Redis is stopped (SIGSTOP) until then (loop time): it reads and answers nothing, while
    /// its keys still expire on the clock.
    var frozenUntil: UInt64 = 0

    init(loop: EventLoop, seed: UInt64) {
        self.loop = loop
        random = SimRandom(seed: seed ^ 0x5eed_7ed1_5000_0000)
    }

    /// Makes `node`'s links (the engine's `links:`).
    func links(node: Int) -> RedisLinkFactory {
        { [unowned self] role, _ in
            let link = SimLink(redis: self, node: node, role: role)
            links.append(link)
            return link
        }
    }

    /// A delivery's time on one link: after the last one (in order), never before `frozen`.
    func deliveryTime(after last: UInt64, frozenUntil: UInt64) -> UInt64 {
        max(last, loop.now + random.next(in: delay), frozenUntil, self.frozenUntil)
    }

    /// `SCROLLSYNC_SIM_LOG=1`: every command, reply and channel message, with its time (a
    /// failing seed's whole story, beyond its trace).
    static let logs = ProcessInfo.processInfo.environment["SCROLLSYNC_SIM_LOG"] == "1"

    /// Whether every event logged is folded into `digest` (`ClusterSimulation.Options.digest`).
    var digesting = false
    /// FNV-1a over every event logged (each command with its reply, channel message, member's
    /// message and the schedule's notes), with its time in nanoseconds: two runs of a seed are
    /// the same run when their digests and `events` are.
    private(set) var digest: UInt64 = 0xCBF2_9CE4_8422_2325
    private(set) var events = 0

    func log(_ text: @autoclosure () -> String) {
        guard Self.logs || digesting else { return }
        let text = text()
        if digesting {
            events += 1
            for byte in "\(loop.now) \(text)\n".utf8 { digest = (digest ^ UInt64(byte)) &* 0x100_0000_01B3 }
        }
        if Self.logs { print("\((loop.now - ClusterSimulation.start) / 1_000_000) ms: \(text)") }
    }

    /// A command as the log shows it: a script by its first line, arguments cut short.
    static func describe(_ arguments: [[UInt8]]) -> String {
        arguments.map { bytes in
            let text = String(decoding: bytes.prefix(60), as: UTF8.self)
            return text.split(separator: "\n").first.map(String.init) ?? text
        }.joined(separator: " ")
    }

    // MARK: Faults

    /// Redis stops for `duration` (SIGSTOP, then SIGCONT): each node's command link, which pings
    /// every second, gives up after 3–4 s without an answer (`RedisConnection`'s timeout) and
    /// reconnects once Redis answers again; what it sent before still runs then (TCP delivered
    /// it). Subscriber links wait without a timeout.
    func freeze(for duration: UInt64) {
        frozenUntil = max(frozenUntil, loop.now + duration)
        for link in links where link.isReady {
            guard case .commands = link.role else { continue }
            let notice = 3_000_000_000 + random.next(in: 0...1_000_000_000)
            guard notice < duration else { continue }
            loop.schedule(after: notice) { [weak link] in link?.timedOut() }
        }
    }

    /// Redis restarts empty: every link drops, every key is gone.
    func restartEmpty() {
        for link in links where link.isReady || link.started { link.drop("redis restarted") }
        strings.removeAll()
        hashes.removeAll()
        expiry.removeAll()
        subscribers.removeAll()
    }

    // MARK: Keys

    /// Forgets `key` if it expired.
    func expire(_ key: String) {
        guard let deadline = expiry[key], deadline <= loop.now else { return }
        strings[key] = nil
        hashes[key] = nil
        expiry[key] = nil
    }

    func get(_ key: String) -> [UInt8]? {
        expire(key)
        return strings[key]
    }

    func hget(_ key: String, _ field: String) -> [UInt8]? {
        expire(key)
        return hashes[key]?.first { $0.field == field }?.value
    }

    func hgetText(_ key: String, _ field: String) -> String? { hget(key, field).map { String(decoding: $0, as: UTF8.self) } }

    func hset(_ key: String, _ field: String, _ value: [UInt8]) {
        expire(key)
        if field == "seq", key.hasSuffix("}"), let old = hgetText(key, "seq").flatMap(Int.init),
           let new = Int(String(decoding: value, as: UTF8.self)), new < old {
            hashSeqDecreases.append("\(key) seq \(old) -> \(new) at \((loop.now - ClusterSimulation.start) / 1_000_000) ms")
        }
        var fields = hashes[key] ?? []
        if let index = fields.firstIndex(where: { $0.field == field }) { fields[index].value = value } else { fields.append((field, value)) }
        hashes[key] = fields
    }

    func hset(_ key: String, _ field: String, _ value: String) { hset(key, field, Array(value.utf8)) }

    func hincrby(_ key: String, _ field: String, _ by: Int) -> Int {
        let value = (hgetText(key, field).flatMap(Int.init) ?? 0) + by
        hset(key, field, String(value))
        return value
    }

    func del(_ key: String) {
        strings[key] = nil
        hashes[key] = nil
        expiry[key] = nil
    }

    func exists(_ key: String) -> Bool {
        expire(key)
        return strings[key] != nil || hashes[key] != nil
    }

    @discardableResult
    func pexpire(_ key: String, _ milliseconds: Int) -> Int {
        guard exists(key) else { return 0 }
        expiry[key] = loop.now + UInt64(milliseconds) * 1_000_000
        return 1
    }

    func setPX(_ key: String, _ value: [UInt8], _ milliseconds: Int) {
        del(key)
        strings[key] = value
        expiry[key] = loop.now + UInt64(milliseconds) * 1_000_000
    }

    func hgetall(_ key: String) -> RedisReply {
        expire(key)
        return .array((hashes[key] ?? []).flatMap { [RedisReply.string(Array($0.field.utf8)), .string($0.value)] })
    }

    /// Sends `message` to the channel's subscribers, each on its own link, in publish order.
    @discardableResult
    func publish(_ channel: String, _ message: [UInt8]) -> Int {
        published?.append(message)
        let receivers = subscribers[channel] ?? []
        for link in receivers { link.push(channel: channel, message) }
        return receivers.count
    }

    // MARK: Commands

    /// Runs one command atomically (a script in one go, as Redis does).
    func execute(_ arguments: [[UInt8]]) -> RedisReply {
        let text = arguments.map { String(decoding: $0, as: UTF8.self) }
        switch text.first?.uppercased() {
        case "PUBLISH", "SPUBLISH":
            return .integer(publish(text[1], arguments[2]))
        case "HSET":
            var added = 0  // as Redis counts: fields that were not there
            for index in stride(from: 2, to: arguments.count - 1, by: 2) {
                if hget(text[1], text[index]) == nil { added += 1 }
                hset(text[1], text[index], arguments[index + 1])
            }
            return .integer(added)
        case "HDEL":
            expire(text[1])
            hashes[text[1]]?.removeAll { $0.field == text[2] }
            if hashes[text[1]]?.isEmpty == true { del(text[1]) }
            return .integer(1)
        case "HGET":
            return hget(text[1], text[2]).map(RedisReply.string) ?? .null
        case "SET":  // (a plain SET: the differential test's second room's lease)
            del(text[1])
            strings[text[1]] = arguments[2]
            return .status("OK")
        case "PEXPIRE":
            return .integer(pexpire(text[1], Int(text[2]) ?? 0))
        case "EXISTS":
            return .integer(exists(text[1]) ? 1 : 0)
        case "EVAL":
            return SimScripts.run(script: text[1], keys: Array(text[3..<(3 + (Int(text[2]) ?? 0))]),
                                  arguments: Array(arguments[(3 + (Int(text[2]) ?? 0))...]), in: self)
        default:
            return .error("ERR unknown command '\(text.first ?? "")' in the simulated Redis")
        }
    }
}

/// One engine against a simulated Redis on an embedded loop, started and connected (a node
/// whose engine the test drives by hand: `LeaseCheckTests`, `WriteBackTests`).
struct SimEngine {
    let loop: EventLoop
    let redis: SimRedis
    let engine: RedisRoomEngine

    init(seed: UInt64, sharded: Bool = false) throws {
        loop = try EventLoop.embedded()
        redis = SimRedis(loop: loop, seed: seed)
        engine = RedisRoomEngine(endpoint: RedisEndpoint(), loop: loop, roomIdleSeconds: 60,
                                 logger: Logger(label: "sim-engine") { _ in SwiftLogNoOpLogHandler() }, sharded: sharded, links: redis.links(node: 0))
        engine.start()
        loop.advance(to: loop.now + 50_000_000)
    }

    /// Stops the engine and lets its links close.
    func stop() {
        engine.stop()
        loop.advance(to: loop.now + 10_000_000)
    }
}

/// The simulation's random choices: one seed, one run.
struct SimRandom {
    var generator: SeededGenerator
    init(seed: UInt64) { generator = SeededGenerator(state: seed) }

    mutating func next() -> UInt64 { generator.next() }
    mutating func next(in range: ClosedRange<UInt64>) -> UInt64 { range.lowerBound + next() % (range.upperBound - range.lowerBound + 1) }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(1, n))) }
    mutating func chance(_ p: Double) -> Bool { Double(next() % 1_000_000) < p * 1_000_000 }
}
