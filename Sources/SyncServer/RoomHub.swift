import ScrollModel
import Transport

/// Where rooms live and how their changes reach members. The embedded `LocalRoomHub`
/// keeps rooms in this process; a hub shared through Redis can take its place.
public protocol RoomHub: Sendable {
    /// Why a new member cannot join `room` now (a limit), or nil. Checked before the upgrade.
    func admission(room: String) -> String?
    /// Adds a session to a room (creating the room) and answers what it needs to be in
    /// sync, or why it was refused. Runs on the session's loop.
    func join(_ member: RoomMember, room: String, role: Role, key: String?) -> Result<RoomCore.Welcome, ProtocolError>
    /// Applies a member's message; the changes reach every member, the sender included.
    func receive(_ message: ClientMessage, from member: RoomMember) -> ProtocolError?
    /// Removes a session (it disconnected).
    func leave(_ member: RoomMember)
}

/// A session as a room sees it: identity, and where to deliver broadcasts.
public final class RoomMember {
    public let id: String
    public let name: String?
    public let peer: WebSocketPeer
    /// The compressor window this receiver accepts (nil: send uncompressed).
    let windowBits: Int?
    /// Highest `seq` delivered, so a member never sees a state twice or out of order.
    var lastSeq = 0
    /// Fingerprint of the last document delivered.
    var lastDocument: String?
    /// Position in its local room's member list (for O(1) removal).
    var slot = -1
    /// The room it joined, once it has.
    var room: String?

    init(id: String, name: String?, peer: WebSocketPeer) {
        self.id = id
        self.name = name
        self.peer = peer
        if let deflate = peer.deflate {
            let bits = deflate.serverMaxWindowBits ?? 15
            windowBits = bits >= 9 ? bits : nil
        } else {
            windowBits = nil
        }
    }
}
