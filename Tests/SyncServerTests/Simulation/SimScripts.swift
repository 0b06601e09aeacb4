@testable import Cluster
import RedisClient
import RoomKit
@testable import WebSocketCore

/// The engine's Lua scripts (`Cluster.Scripts`) as the simulated Redis runs them: each one's
/// semantics in Swift, recognised by its text (a script the simulation does not know is an
/// error reply, so a new script fails the simulation until it is written here too). With
/// `redis.secret` a script signs what it publishes as the Lua's `signed` does; without it the
/// signing keys are empty and nothing is signed.
enum SimScripts {
    /// `signed(k, ver, seq)` of `Scripts.sign`: `!` and the SHA-1 (hex) of the key, the version
    /// and the state's `seq` (empty for other changes), then a space; nothing for an empty key.
    static func signed(_ key: [UInt8], _ ver: Int, _ seq: String = "") -> [UInt8] {
        guard !key.isEmpty else { return [] }
        return [UInt8(ascii: "!")] + ChannelSigner.hex(SHA1.hash(key + Array(" \(ver) \(seq)".utf8))) + [UInt8(ascii: " ")]
    }

    static func run(script: String, keys: [String], arguments: [[UInt8]], in redis: SimRedis) -> RedisReply {
        let argv = arguments.map { String(decoding: $0, as: UTF8.self) }
        func all(_ name: KeyPath<Scripts.Set, String>) -> Bool { script == Scripts.Set.plain[keyPath: name] || script == Scripts.Set.sharded[keyPath: name] }
        if all(\.snapshot) {
            if redis.hget(keys[0], "seq") == nil {
                redis.hset(keys[0], "seq", arguments[0])
                redis.pexpire(keys[0], Int(argv[1]) ?? 0)
            }
            return snapshot(keys, redis)
        }
        if all(\.scroll) { return scroll(keys, argv, arguments, redis) }
        if all(\.control) { return control(keys, argv, arguments, redis) }
        if all(\.setAndPublish) {
            redis.hset(keys[0], argv[0], arguments[1])
            let ver = redis.hincrby(keys[0], "ver", 1)
            redis.pexpire(keys[0], Int(argv[4]) ?? 0)
            redis.publish(argv[3], signed(arguments[5], ver) + Array("\(ver) ".utf8) + arguments[2])
            return .integer(ver)
        }
        if all(\.reconcile) { return reconcile(keys, argv, arguments, redis) }
        if script == Scripts.writeBack {
            redis.writeBackCalls += 1
            var written = 0
            for i in 0..<keys.count / 2 {
                let (hash, lease) = (keys[2 * i], keys[2 * i + 1])
                guard redis.get(lease) == arguments[3 * i + 2], let seq = Int(argv[3 * i]),
                      seq > (redis.hgetText(hash, "seq").flatMap(Int.init) ?? -1) else { continue }
                redis.hset(hash, "seq", arguments[3 * i])
                redis.hset(hash, "suf", arguments[3 * i + 1])
                written += 1
            }
            return .integer(written)
        }
        if script == Scripts.lease {
            return .array([.string(redis.get(keys[1]) ?? []), .string(redis.hget(keys[0], "ver") ?? Array("0".utf8)),
                           .string(redis.hget(keys[0], "dname") ?? [])])
        }
        if script == Scripts.take {
            let n = (redis.get(keys[0]).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0) + 1
            redis.strings[keys[0]] = Array(String(n).utf8)
            if n == 1 { redis.pexpire(keys[0], Int(argv[1]) ?? 0) }
            if n > Int(argv[0]) ?? 0 {
                redis.strings[keys[0]] = Array(String(n - 1).utf8)
                return .integer(0)
            }
            return .integer(1)
        }
        if script == Scripts.giveBack {
            if let n = redis.get(keys[0]).flatMap({ Int(String(decoding: $0, as: UTF8.self)) }), n > 0 { redis.strings[keys[0]] = Array(String(n - 1).utf8) }
            return .integer(1)
        }
        if all(\.bindKey) {
            if redis.hget(keys[0], "key") == nil {
                redis.hset(keys[0], "key", arguments[0])
                let ver = redis.hincrby(keys[0], "ver", 1)
                redis.publish(argv[1], signed(arguments[3], ver) + Array("\(ver) ".utf8) + arguments[2])
            }
            return redis.hget(keys[0], "key").map(RedisReply.string) ?? .null
        }
        return .error("ERR a script the simulated Redis does not know: \(script.prefix(60))")
    }

    static func snapshot(_ keys: [String], _ redis: SimRedis) -> RedisReply {
        .array([redis.hgetall(keys[0]), .string(redis.get(keys[1]) ?? []), redis.hgetall(keys[2])])
    }

    /// KEYS hash, lease; ARGV session, suffix, channel, signing key, `seq` floor.
    static func scroll(_ keys: [String], _ argv: [String], _ arguments: [[UInt8]], _ redis: SimRedis) -> RedisReply {
        guard let holder = redis.get(keys[1]), holder == arguments[0] else { return .error("ERR NOTDRIVER") }  // as redis-server 7 says it
        let seq = max((redis.hgetText(keys[0], "seq").flatMap(Int.init) ?? 0) + 1, argv.count > 4 ? Int(argv[4]) ?? 0 : 0)
        let ver = redis.hincrby(keys[0], "ver", 1)
        redis.hset(keys[0], "seq", String(seq))
        redis.hset(keys[0], "suf", arguments[1])
        redis.publish(argv[2], signed(arguments[3], ver, String(seq)) + Array("\(ver) ".utf8) + statePrefix + Array(String(seq).utf8) + arguments[1])
        return .integer(seq)
    }

    /// KEYS hash, lease; ARGV mode, session, name, stale, lease ms, idle ms, channel, driver message, signing key.
    static func control(_ keys: [String], _ argv: [String], _ arguments: [[UInt8]], _ redis: SimRedis) -> RedisReply {
        let holder = redis.get(keys[1]).map { String(decoding: $0, as: UTF8.self) }
        let (mode, session) = (argv[0], argv[1])
        switch mode {
        case "claim": if holder != nil { return .integer(0) }
        case "inherit", "lapse": if holder != nil || redis.hgetText(keys[0], "driver") != argv[3] { return .integer(0) }
        case "release": if holder != session { return .integer(0) }
        default: break
        }
        if mode == "release" || mode == "lapse" {
            redis.del(keys[1])
            redis.hset(keys[0], "driver", "")
            redis.hset(keys[0], "dname", "")
        } else {
            redis.setPX(keys[1], arguments[1], Int(argv[4]) ?? 0)
            redis.hset(keys[0], "driver", session)
            redis.hset(keys[0], "dname", arguments[2])
        }
        let ver = redis.hincrby(keys[0], "ver", 1)
        redis.pexpire(keys[0], Int(argv[5]) ?? 0)
        redis.publish(argv[6], signed(arguments[8], ver) + Array("\(ver) ".utf8) + arguments[7])
        return .integer(ver)
    }

    /// KEYS hash, lease, nodes; ARGV (1-based as in the Lua) 1 local driver, 2 its name, 3 local
    /// seq, 4 local suffix, 5 channel, 6 lease ms, 7 idle ms, 8 driver message, 9 document
    /// message, 10 key digest, 11 follow key record, 12–14 signing keys (of the driver message,
    /// the document, the local state), 15 `seq` base, 16 the local state as it was ordered
    /// (empty: as 4), 17 the follow key's `access` message, 18 its signing key, 19 the presenter
    /// key's `key` message, 20 its signing key.
    static func reconcile(_ keys: [String], _ argv: [String], _ arguments: [[UInt8]], _ redis: SimRedis) -> RedisReply {
        func arg(_ n: Int) -> [UInt8] { arguments[n - 1] }
        func text(_ n: Int) -> String { argv[n - 1] }
        let hash = keys[0]
        if redis.hget(hash, "seq") == nil { redis.hset(hash, "seq", arg(15)) }
        let cur = redis.hgetText(hash, "seq").flatMap(Int.init) ?? 0
        let holder = redis.get(keys[1]).map { String(decoding: $0, as: UTF8.self) }
        let localSeq = Int(text(3)) ?? 0
        let mine = text(1) != "" && (holder == nil || holder == text(1))
        if mine {
            redis.setPX(keys[1], arg(1), Int(text(6)) ?? 0)
            redis.hset(hash, "driver", arg(1))
            redis.hset(hash, "dname", arg(2))
            if holder != text(1) {
                let ver = redis.hincrby(hash, "ver", 1)
                redis.publish(text(5), signed(arg(12), ver) + Array("\(ver) ".utf8) + arg(8))
            }
            if !arg(9).isEmpty, redis.hget(hash, "doc") != arg(9) {
                redis.hset(hash, "doc", arg(9))
                let ver = redis.hincrby(hash, "ver", 1)
                redis.publish(text(5), signed(arg(13), ver) + Array("\(ver) ".utf8) + arg(9))
            }
        } else if !arg(9).isEmpty, redis.hget(hash, "doc") == nil {
            redis.hset(hash, "doc", arg(9))
            let ver = redis.hincrby(hash, "ver", 1)
            redis.publish(text(5), signed(arg(13), ver) + Array("\(ver) ".utf8) + arg(9))
        }
        if !arg(10).isEmpty, redis.hget(hash, "key") == nil {
            redis.hset(hash, "key", arg(10))
            let ver = redis.hincrby(hash, "ver", 1)
            redis.publish(text(5), signed(arg(20), ver) + Array("\(ver) ".utf8) + arg(19))
        }
        if !arg(11).isEmpty, redis.hget(hash, "fkey") == nil {
            redis.hset(hash, "fkey", arg(11))
            let ver = redis.hincrby(hash, "ver", 1)
            redis.publish(text(5), signed(arg(18), ver) + Array("\(ver) ".utf8) + arg(17))
        }
        if mine && !arg(4).isEmpty {
            let seq = max(cur + SharedTiming.handoverLeap, localSeq + 1, Int(text(15)) ?? 0)
            redis.hset(hash, "seq", String(seq))
            redis.hset(hash, "suf", arg(4))
            let ver = redis.hincrby(hash, "ver", 1)
            redis.publish(text(5), signed(arg(14), ver, String(seq)) + Array("\(ver) ".utf8) + statePrefix + Array(String(seq).utf8) + arg(4))
        } else if localSeq > cur && !arg(4).isEmpty {
            redis.hset(hash, "seq", text(3))
            redis.hset(hash, "suf", arguments.count > 15 && !arg(16).isEmpty ? arg(16) : arg(4))
        }
        redis.pexpire(hash, Int(text(7)) ?? 0)
        return snapshot(keys, redis)
    }
}
