import HTTP1
import ScrollModel
import Transport
import WebSocketCore

/// Where rooms live and how their changes reach members. The embedded `LocalRoomHub`
/// keeps rooms in this process; a hub shared through Redis can take its place.
public protocol RoomHub: Sendable {
    /// Why a new member cannot join `room` now (a limit: 503, or 429 for its address; a
    /// private room without its follow key: 401, or with a wrong one: 403), or nil. Checked
    /// before the upgrade. `authorized`: a signed token already admitted it in `role`.
    func admission(room: String, role: Role, address: String, followKey: String?, authorized: Bool) -> HTTPResponse?
    /// Adds a session to a room (creating the room) and answers the member (`joined`) with
    /// what it needs to be in sync, or why it was refused: at once, or later when the room
    /// must be fetched from another node's store first. Called on the session's loop and
    /// answers on it.
    func join(_ member: RoomMember, room: String, role: Role, key: String?)
    /// Applies a member's message; the changes reach every member, the sender included.
    func receive(_ message: ClientMessage, from member: RoomMember) -> ProtocolError?
    /// Removes a session (it disconnected).
    func leave(_ member: RoomMember)
}
