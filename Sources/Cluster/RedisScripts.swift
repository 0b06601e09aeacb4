import RoomKit

/// The Lua scripts: each change is checked, ordered, stored and published at once.
/// State messages are written as `statePrefix`, the `seq` the script assigns, and the suffix.
package enum Scripts {
    /// The scripts that publish, as one engine runs them: with `PUBLISH`, or with `SPUBLISH`
    /// on a Redis Cluster (sharded pub/sub: the room's channel and keys share its slot).
    package struct Set {
        package let snapshot: String, scroll: String, control: String, setAndPublish: String, reconcile: String, bindKey: String

        package static let plain = Set(snapshot: Scripts.snapshot, scroll: Scripts.scroll, control: Scripts.control,
                               setAndPublish: Scripts.setAndPublish, reconcile: Scripts.reconcile, bindKey: Scripts.bindKey)
        package static let sharded = Set(snapshot: Scripts.snapshot, scroll: spublishing(Scripts.scroll), control: spublishing(Scripts.control),
                                 setAndPublish: spublishing(Scripts.setAndPublish), reconcile: spublishing(Scripts.reconcile),
                                 bindKey: spublishing(Scripts.bindKey))

        private static func spublishing(_ script: String) -> String {
            script.replacing("redis.call('PUBLISH',", with: "redis.call('SPUBLISH',")
        }
    }

    /// Signs a change it publishes (`ChannelSigner`): `k` the key the node sent (empty without
    /// `redis.secret`: nothing to sign, no SHA-1), the version and the state's seq assigned here.
    /// `digits` writes a `seq` in full: Lua's own `..` writes numbers of more than 14 digits with
    /// an exponent, and a `seq` from the wall clock has 16.
    package static let sign = """
        local function signed(k, ver, seq) if k == '' then return '' end return '!' .. redis.sha1hex(k .. ' ' .. ver .. ' ' .. seq) .. ' ' end
        local function digits(n) return string.format('%d', n) end
        """

    /// KEYS hash, lease, nodes; ARGV seq base, idle ms -> {hash fields, lease holder, node counts}.
    /// A hash without `seq` (a new room, or one an empty Redis forgot) starts at the base the node
    /// sends, its wall clock in microseconds: above any `seq` a node may still hold from before
    /// (docs/cluster.md §2, I1 after Redis restarted empty).
    package static let snapshot = """
        if redis.call('HSETNX', KEYS[1], 'seq', ARGV[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
        \(snapshotReply)
        """

    /// What `snapshot` (and `reconcile`) answers.
    static let snapshotReply = """
        return {redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[2]) or '', redis.call('HGETALL', KEYS[3])}
        """

    /// KEYS hash, lease; ARGV session, suffix, channel, signing key, `seq` floor. A scroll sent before its
    /// node has heard that it holds the lease (the lease holder's node publishes its driver's states
    /// itself, without a script: `RedisRoomEngine.publish(led:seq:by:room:keep:)`). Numbered one above
    /// the hash's `seq` and at least the floor the node sends: the hash lags the led states (written
    /// back every 250 ms, a pending write dropped when the lease moves), so one above it alone could
    /// be a `seq` the previous holder's node already gave another state (docs/cluster.md §7.2, I1).
    /// The hash's expiry is not renewed here: the lease holder's node renews the lease and the hash
    /// every second.
    package static let scroll = """
        \(sign)
        if redis.call('GET', KEYS[2]) ~= ARGV[1] then return redis.error_reply('NOTDRIVER') end
        local seq = math.max((tonumber(redis.call('HGET', KEYS[1], 'seq')) or 0) + 1, tonumber(ARGV[5]) or 0)
        local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
        redis.call('HSET', KEYS[1], 'seq', digits(seq), 'suf', ARGV[2])
        redis.call('PUBLISH', ARGV[3], signed(ARGV[4], ver, digits(seq)) .. ver .. ' \(String(decoding: statePrefix, as: UTF8.self))' .. digits(seq) .. ARGV[2])
        return seq
        """

    /// KEYS hash, lease of each room (pairs); ARGV seq, suffix, the state's `by` of each (triples)
    /// -> how many were written. A led state is written back into its room's hash only if its
    /// `seq` is above the hash's and its driver still holds the lease: the hash's `seq` never goes
    /// back (docs/cluster.md, I4), even when an old lease holder's delayed write lands after the
    /// new holder's, and a state of a driver who lost the lease is never written (divergence 2).
    /// Several rooms' in one call where their keys may meet in one script (not on a Redis
    /// Cluster): a call costs Redis some ten times a plain `HSET` (docs/benchmarks-log.md).
    static let writeBack = """
        local written = 0
        for i = 1, #KEYS / 2 do
          local seq = tonumber(ARGV[3 * i - 2])
          if redis.call('GET', KEYS[2 * i]) == ARGV[3 * i]
             and seq > (tonumber(redis.call('HGET', KEYS[2 * i - 1], 'seq')) or -1) then
            redis.call('HSET', KEYS[2 * i - 1], 'seq', ARGV[3 * i - 2], 'suf', ARGV[3 * i - 1])
            written = written + 1
          end
        end
        return written
        """

    /// KEYS hash, lease; ARGV mode, session, name, stale, lease ms, idle ms, channel, driver message, signing key
    /// -> 0 if refused, else the version the change was ordered under (the node that asked
    /// waits until its room reaches it: docs/cluster.md, divergence 3).
    package static let control = """
        \(sign)
        local holder = redis.call('GET', KEYS[2])
        local mode, session = ARGV[1], ARGV[2]
        if mode == 'claim' then
          if holder then return 0 end
        elseif mode == 'inherit' or mode == 'lapse' then
          if holder or redis.call('HGET', KEYS[1], 'driver') ~= ARGV[4] then return 0 end
        elseif mode == 'release' then
          if holder ~= session then return 0 end
        end
        if mode == 'release' or mode == 'lapse' then
          redis.call('DEL', KEYS[2])
          redis.call('HSET', KEYS[1], 'driver', '', 'dname', '')
        else
          redis.call('SET', KEYS[2], session, 'PX', ARGV[5])
          redis.call('HSET', KEYS[1], 'driver', session, 'dname', ARGV[3])
        end
        local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
        redis.call('PEXPIRE', KEYS[1], ARGV[6])
        redis.call('PUBLISH', ARGV[7], signed(ARGV[9], ver, '') .. ver .. ' ' .. ARGV[8])
        return ver
        """

    /// Keeps one field of the room's hash and publishes the change that says so (a document:
    /// the `document` message in `doc`; a follow key: its record in `fkey`, an `access`
    /// message). KEYS hash; ARGV field, value, message, channel, idle ms, signing key
    package static let setAndPublish = """
        \(sign)
        redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
        local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
        redis.call('PEXPIRE', KEYS[1], ARGV[5])
        redis.call('PUBLISH', ARGV[4], signed(ARGV[6], ver, '') .. ver .. ' ' .. ARGV[3])
        return ver
        """

    /// KEYS hash; ARGV presenter key record, channel, `key` message, signing key -> the record
    /// the room keeps (the first any node bound). A record it binds is published (a `key`
    /// change): a node that holds the room keyless (it fetched it before) takes it, and its
    /// presenters who proved none go (docs/cluster.md §7.18).
    package static let bindKey = """
        \(sign)
        if redis.call('HSETNX', KEYS[1], 'key', ARGV[1]) == 1 then
          local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
          redis.call('PUBLISH', ARGV[2], signed(ARGV[4], ver, '') .. ver .. ' ' .. ARGV[3])
        end
        return redis.call('HGET', KEYS[1], 'key')
        """

    /// KEYS hash, lease -> {lease holder, version, driver's name}: what confirms a control change.
    package static let lease = """
        return {redis.call('GET', KEYS[2]) or '', redis.call('HGET', KEYS[1], 'ver') or '0', redis.call('HGET', KEYS[1], 'dname') or ''}
        """

    /// KEYS count; ARGV limit, window ms -> 1 if one use was taken, 0 if none is left.
    /// The window starts at the first use.
    package static let take = """
        local n = redis.call('INCR', KEYS[1])
        if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
        if n > tonumber(ARGV[1]) then
          redis.call('DECR', KEYS[1])
          return 0
        end
        return 1
        """

    /// KEYS count -> gives one use back (never below 0).
    package static let giveBack = """
        if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
        return 1
        """

    /// After an outage. KEYS hash, lease, nodes; ARGV local driver, its name, local seq,
    /// local state suffix, channel, lease ms, idle ms, driver message, document message,
    /// presenter key digest (kept only if the room has none), follow key record (the same);
    /// signing keys (empty without `redis.secret`) of the driver message, the document and the
    /// local state; the `seq` base of a hash without one (as `snapshot`); the local state as it
    /// was ordered when the suffix (published under the local driver) names another `by`
    /// (empty: the same); the `access` message of the follow key record, and its signing key
    /// (a follow key put back is published, I7: a node that fetched the room while the hash had
    /// none would keep it public otherwise); the `key` message of the presenter key digest, and
    /// its signing key (the same for a presenter key put back: §7.18).
    /// The local driver keeps control if the lease is free or its own; its state then goes
    /// out again numbered as a new lease's first state (`RoomMachine.leap(above:)`: 1,024 above
    /// the hash's `seq`, the `seq` clock at least), above every node's and above led states
    /// the hash never heard (docs/cluster.md §7.15). Only that node publishes a state: it is the
    /// only one that ordered states alone meanwhile. Another node's newer state goes into the
    /// hash as a base only, as it was ordered (no publish: published above the hash's `seq`, it
    /// could take a number the driver's node gave another state alone, docs/cluster.md
    /// divergence 9; under its node's driver at its own `seq`, a second state under it, §7.15); the
    /// node asks the others for their newest (`Q`) after the merge. A document goes out from
    /// any node when the room has none (or from the driver's node when it differs): nodes that
    /// merged before it would not hear of it otherwise.
    package static let reconcile = """
        \(sign)
        redis.call('HSETNX', KEYS[1], 'seq', ARGV[15])
        local cur = tonumber(redis.call('HGET', KEYS[1], 'seq'))
        local holder = redis.call('GET', KEYS[2])
        local localSeq = tonumber(ARGV[3])
        local mine = ARGV[1] ~= '' and (not holder or holder == ARGV[1])
        if mine then
          redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[6])
          redis.call('HSET', KEYS[1], 'driver', ARGV[1], 'dname', ARGV[2])
          if holder ~= ARGV[1] then
            local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
            redis.call('PUBLISH', ARGV[5], signed(ARGV[12], ver, '') .. ver .. ' ' .. ARGV[8])
          end
          if ARGV[9] ~= '' and redis.call('HGET', KEYS[1], 'doc') ~= ARGV[9] then
            redis.call('HSET', KEYS[1], 'doc', ARGV[9])
            local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
            redis.call('PUBLISH', ARGV[5], signed(ARGV[13], ver, '') .. ver .. ' ' .. ARGV[9])
          end
        elseif ARGV[9] ~= '' and redis.call('HEXISTS', KEYS[1], 'doc') == 0 then
          redis.call('HSET', KEYS[1], 'doc', ARGV[9])
          local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
          redis.call('PUBLISH', ARGV[5], signed(ARGV[13], ver, '') .. ver .. ' ' .. ARGV[9])
        end
        if ARGV[10] ~= '' and redis.call('HSETNX', KEYS[1], 'key', ARGV[10]) == 1 then
          local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
          redis.call('PUBLISH', ARGV[5], signed(ARGV[20], ver, '') .. ver .. ' ' .. ARGV[19])
        end
        if ARGV[11] ~= '' and redis.call('HSETNX', KEYS[1], 'fkey', ARGV[11]) == 1 then
          local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
          redis.call('PUBLISH', ARGV[5], signed(ARGV[18], ver, '') .. ver .. ' ' .. ARGV[17])
        end
        if mine and ARGV[4] ~= '' then
          local seq = math.max(cur + \(SharedTiming.handoverLeap), localSeq + 1, tonumber(ARGV[15]))
          redis.call('HSET', KEYS[1], 'seq', digits(seq), 'suf', ARGV[4])
          local ver = redis.call('HINCRBY', KEYS[1], 'ver', 1)
          redis.call('PUBLISH', ARGV[5], signed(ARGV[14], ver, digits(seq)) .. ver .. ' \(String(decoding: statePrefix, as: UTF8.self))' .. digits(seq) .. ARGV[4])
        elseif localSeq > cur and ARGV[4] ~= '' then
          redis.call('HSET', KEYS[1], 'seq', ARGV[3], 'suf', (ARGV[16] ~= '' and ARGV[16]) or ARGV[4])
        end
        redis.call('PEXPIRE', KEYS[1], ARGV[7])
        \(snapshotReply)
        """
}
