import Access
import RoomKit
import ScrollModel

/// Counts the nodes share: uses of a rate count (wrong presenter keys per address and room,
/// one Redis count for every node) and each node's presence in a room.
extension RedisRoomEngine {
    public func take(count: String, room: String, limit: Int, windowMilliseconds: Int, reply: @escaping @Sendable (Bool?) -> Void) {
        loop.execute { [self] in
            guard isAvailable else { return reply(nil) }
            commands.send(["EVAL", Scripts.take, "1", keys(room).hash + ":count:" + count, String(limit), String(windowMilliseconds)]) { answer in
                switch answer {
                case .integer(let taken): reply(taken == 1)
                default: reply(nil)
                }
            }
        }
    }

    public func giveBack(count: String, room: String) {
        loop.execute { [self] in
            commands.send(["EVAL", Scripts.giveBack, "1", keys(room).hash + ":count:" + count])
        }
    }

    public func presence(room: String, counts: Presence) {
        loop.execute { [self] in
            let k = keys(room)
            let text = "\(counts.presenters) \(counts.followers) \(counts.detached)"
            // Plain commands, pipelined (a heartbeat per room every 5 s: no script). Expiring a
            // room's hash that is gone does nothing.
            if counts == Presence() {
                commands.send(["HDEL", k.nodes, node])
            } else {
                commands.send(["HSET", k.nodes, node, text + " " + String(wallClock())])
                commands.send(["PEXPIRE", k.nodes, String(roomIdleMilliseconds)])
            }
            commands.send(["PEXPIRE", k.hash, String(roomIdleMilliseconds)])
            commands.send([Array(publishCommand.utf8), Array(k.channel.utf8), signed(Array(("P " + node + " " + text).utf8), channel: k.channel)])
        }
    }

    /// A node's counts older than this are taken as those of a node that died.
    package static let presenceLifetimeMilliseconds = SharedTiming.presenceLifetimeMilliseconds
}
