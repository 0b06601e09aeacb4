/// An input broke an invariant of the code under test (not only "it crashed").
public struct FuzzFinding: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One parser of bytes from someone else, with the invariants it must keep for any input.
/// The same checks run under libFuzzer (`Scripts/fuzz`) and, for every saved regression
/// input in `Fuzz/regressions/TARGET/`, in `swift test`.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// HTTP request head and WebSocket handshake validation.
    case http
    /// A server-side WebSocket connection fed the bytes after a handshake, whole and split in two.
    case websocket
    /// The same with permessage-deflate agreed.
    case websocketDeflate = "websocket-deflate"
    /// The bounded inflater; and deflate → inflate round trips.
    case inflate
    /// Room-protocol messages from clients.
    case roomMessage = "room-message"
    /// Server messages as clients and the room store decode them; decode → encode round trips.
    case serverEvent = "server-event"
    /// A server's answer as a client reads it: the handshake response, then frames, then the
    /// server messages in them.
    case websocketClient = "websocket-client"
    /// Server messages, one per line, as a terminal follower follows and draws them.
    case followerView = "follower-view"
    /// A Markdown or text document → layout at a width from the input → anchor ↔ row.
    case markdown
    /// A stored room file (the store's checksummed format).
    case storeFile = "store-file"
    /// A configuration file and its validation.
    case configuration
    /// `scrollsync drive` scripts.
    case driveScript = "drive-script"
    /// Redis replies (RESP2/RESP3), whole and split.
    case resp
    /// `ws://` / `wss://` URLs: what parses prints back to itself.
    case websocketURL = "websocket-url"
    /// What a node reads from Redis: channel messages, a room's hash and node table.
    case redisInput = "redis-input"
    /// A recording file (Protocol/RECORDING.md): read or refused with a line; what reads
    /// writes back to a recording that reads the same.
    case recording
    /// Secrets compared (`ConstantTime.equal`, token signatures) and found in URLs (`QueryText`).
    case secretCompare = "secret-compare"

    /// Runs the target on `data`; throws a finding when an invariant breaks.
    public func check(_ data: [UInt8]) throws(FuzzFinding) {
        switch self {
        case .http: try Self.http(data)
        case .websocket: try Self.websocket(data, deflate: false)
        case .websocketDeflate: try Self.websocket(data, deflate: true)
        case .inflate: try Self.inflate(data)
        case .roomMessage: try Self.roomMessage(data)
        case .serverEvent: try Self.serverEvent(data)
        case .websocketClient: try Self.websocketClient(data)
        case .followerView: try Self.followerView(data)
        case .markdown: try Self.markdown(data)
        case .storeFile: try Self.storeFile(data)
        case .configuration: try Self.configuration(data)
        case .driveScript: try Self.driveScript(data)
        case .resp: try Self.resp(data)
        case .websocketURL: try Self.websocketURL(data)
        case .redisInput: try Self.redisInput(data)
        case .recording: try Self.recording(data)
        case .secretCompare: try Self.secretCompare(data)
        }
    }

    /// Throws a finding that says `message` unless `condition` holds.
    public static func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFinding) {
        if !condition { throw FuzzFinding(message()) }
    }
}
