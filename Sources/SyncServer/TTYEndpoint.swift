package import Access
import Bytes
import HTTP1
import Hub
import ScrollModel
import Synchronization
import TerminalFrames
import TextSafety

/// `GET /rooms/NAME/tty?cols=C&rows=R`: the room's follower view for a terminal with nothing
/// installed (`curl -N`), rendered on the server as `scrollsync follow` renders it and streamed
/// as one frame per change of the room over chunked HTTP/1.1 (`ScreenStream`). The reader is a
/// follower of the room like any other: counted in presence, refused as one (a private room's
/// `followKey=…`, `token=…` or `Authorization: Bearer`, the room's limits), and besides within
/// `limits.ttyReaders` in all and `limits.ttyReadersPerAddress`. A browser that asks for it
/// without a size (`Accept: text/html`) gets the room's viewer page instead.
final class TTYEndpoint: Sendable {
    /// What a request to the endpoint becomes.
    enum Opening {
        case answer(HTTPResponse)
        /// A stream: its member (a follower, not yet joined), the size it asked for, and the
        /// answer's head.
        case stream(RoomMember, ScreenSize, head: SharedBytes)
    }

    let hub: LocalRoomHub
    let rooms: RoomEndpoint
    /// Readers in all and per address (an IPv6 client by its network, as for connections).
    let limits: ConnectionLimits
    private let open = Atomic<Int>(0)
    /// The scheme the room page's one-liner names (`https` behind the server's own TLS).
    let scheme: String

    init(hub: LocalRoomHub, rooms: RoomEndpoint, total: Int, perAddress: Int, grouping: AddressGrouping, secure: Bool,
         refusals: RefusalCounters) {
        self.hub = hub
        self.rooms = rooms
        self.scheme = secure ? "https" : "http"
        limits = ConnectionLimits(total: total, perAddress: perAddress, grouping: grouping, what: "terminal readers") {
            refusals.count(.connections)
        }
    }

    /// The room named by a path `/rooms/NAME/tty` (NAME as given; checked by `open`).
    static func room(in path: Substring) -> Substring? {
        let bytes = path.utf8
        guard bytes.starts(with: "/rooms/".utf8), bytes.reversed().starts(with: "/tty".utf8.reversed()),
              bytes.count > "/rooms//tty".utf8.count else { return nil }
        return path.dropFirst("/rooms/".count).dropLast("/tty".count)
    }

    /// Admits `request` from `address` (a client group) as a reader of its room, or answers it.
    func open(_ request: HTTPRequest, name: Substring, from address: String, peer: WebSocketPeer) -> Opening {
        let room = String(name)
        guard RoomEndpoint.isValidRoomName(room) else {
            return .answer(.error(400, "room names are 1 to 64 characters of A-Z a-z 0-9 . _ - (not . or ..)"))
        }
        guard request.method == "GET" else { return .answer(.error(405, "\(request.path) answers GET only", headers: [("Allow", "GET")])) }
        let query: Query
        do {
            query = try Query(request.query)
        } catch {
            return .answer(.error(400, error.message))
        }
        if query["cols"] == nil, query["rows"] == nil, request.value(.accept)?.contains("text/html") == true {
            return .answer(ViewerEndpoint.answer(ViewerAssets.page(room: room, terminal: oneLiner(room: room, host: request.value(.host))),
                                                 type: "text/html; charset=utf-8"))
        }
        let size: ScreenSize
        switch ScreenSize.parse(columns: query["cols"], rows: query["rows"]) {
        case .failure(let malformed): return .answer(.error(400, malformed.message))
        case .success(let parsed): size = parsed
        }
        if let role = query["role"], role != "follower" {
            return .answer(.error(400, "the terminal view follows a room; to present, connect a WebSocket to /rooms/\(room)?role=presenter"))
        }
        let claims: TokenClaims?
        switch rooms.authorize(request, query: query, room: room, role: .follower) {
        case .failure(let refusal): return .answer(refusal.response)
        case .success(let given): claims = given
        }
        let followKey = query["followKey"].flatMap { $0.isEmpty ? nil : $0 }
        if let refusal = hub.admission(room: room, role: .follower, address: address, followKey: followKey, authorized: claims != nil) {
            return .answer(refusal)
        }
        let count = open.add(1, ordering: .relaxed).newValue
        if let refusal = limits.admit(address: peer.channel.peerAddress, open: count) {
            closed(address: peer.channel.peerAddress)
            return .answer(refusal)
        }
        let member = rooms.member(on: peer, room: room, address: address, followKey: followKey, authorized: claims != nil, name: claims?.name)
        return .stream(member, size, head: ScreenStream.head)
    }

    /// A stream `open` admitted has ended.
    func closed(address: String) {
        open.subtract(1, ordering: .relaxed)
        limits.release(address: address)
    }

    /// Readers streaming now.
    var readers: Int { open.load(ordering: .relaxed) }

    private static let hostBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]".utf8)

    /// The command the room's page shows: `curl -N '…/tty?cols=…'` at the terminal's own size.
    func oneLiner(room: String, host: String?) -> String {
        // Only a host's characters (a name, an IPv4 or bracketed IPv6 address, a port): the
        // line is pasted into a shell, and `Host` is whatever the request said.
        let valid = host.map { !$0.isEmpty && $0.utf8.count <= 255 && $0.utf8.allSatisfy { Self.hostBytes.contains($0) } } ?? false
        let host = valid ? host! : "HOST:PORT"
        return "curl -N \"\(scheme)://\(host)/rooms/\(room)/tty?cols=$(tput cols)&rows=$(tput lines)\""
    }
}
