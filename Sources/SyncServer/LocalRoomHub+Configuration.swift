import Hub
import Operations

extension LocalRoomHub.Options {
    /// The hub's options: the one place they come from the configuration (the hub declares no
    /// default of its own; Operations does not import the hub, so the front joins the two).
    init(_ configuration: ServerConfiguration) {
        let limits = configuration.limits, rooms = configuration.rooms
        self.init(requirePresenterKey: rooms.requirePresenterKey, roomIdleSeconds: rooms.roomIdleSeconds,
                  undrivenIdleSeconds: rooms.undrivenIdleSeconds, conflation: rooms.conflation, recordRooms: rooms.recordRooms,
                  maxRooms: limits.rooms, maxMembersPerRoom: limits.membersPerRoom, roomCreationsPerMinute: limits.roomCreationsPerMinute,
                  unclaimedRoomsPerAddress: limits.unclaimedRoomsPerAddress, keyFailuresPerMinute: limits.keyFailuresPerMinute,
                  documentsTotalBytes: limits.documentsTotalBytes, messageLimits: configuration.messageLimits,
                  recordingBytes: limits.recordingBytes, recordingsTotalBytes: limits.recordingsTotalBytes,
                  recordingsBytesPerAddress: limits.recordingsBytesPerAddress, screenSizesPerRoom: limits.ttySizesPerRoom)
    }
}
