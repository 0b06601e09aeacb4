import RoomKit

/// `Q NODE` on a room's channel: who holds the newest state? Every other node that holds the
/// room passes its own on (the lease holder's node orders its driver's again), at a bounded
/// rate (`RoomMachine.stateWanted`). Asked after a fetch, after a merge, and by a node whose
/// `lapse` ended a driver's turn (docs/cluster.md §3, §7.14).
extension RedisRoomEngine {
    public func askNewest(room: String) {
        loop.execute { [self] in askNewest(channel: keys(room).channel) }
    }

    /// On the engine's loop.
    func askNewest(channel: String) {
        commands.send([Array(publishCommand.utf8), Array(channel.utf8), signed(Array(("Q " + node).utf8), channel: channel)])
    }
}
