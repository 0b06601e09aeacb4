import ScrollModel
import Transport

/// Where rooms live and how their changes reach members. The embedded `LocalRoomHub`
/// keeps rooms in this process; a hub shared through Redis can take its place.
public protocol RoomHub: Sendable {
    /// Why a new member cannot join `room` now (a limit), or nil. Checked before the upgrade.
    func admission(room: String) -> String?
    /// Adds a session to a room (creating the room) and answers what it needs to be in
    /// sync, or why it was refused: at once, or later when the room must be fetched from
    /// another node's store first. Called on the session's loop and answers on it.
    func join(_ member: RoomMember, room: String, role: Role, key: String?,
              completion: @escaping (Result<RoomCore.Welcome, ProtocolError>) -> Void)
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
    /// It left (disconnected), perhaps while its join waited.
    var left = false

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

/// Carries a value that is only ever touched on one thread across a `@Sendable` hop.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
