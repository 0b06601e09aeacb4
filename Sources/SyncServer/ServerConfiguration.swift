import WebSocketCore

/// How `scrollsync serve` runs. Every limit is finite; each default says why it is what it is.
public struct ServerConfiguration: Sendable {
    /// Address to bind. Loopback by default so that a first run exposes nothing; use
    /// `0.0.0.0` or `::` to serve others.
    public var host = "127.0.0.1"
    /// TCP port; 0 picks a free one (the log line names it).
    public var port = 8080
    /// PEM certificate chain and private key; both or neither. With them the server speaks wss://.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// The `/echo` endpoint for conformance tests (Autobahn, interop).
    public var echoEnabled = true
    /// Limits for `/echo`: 16 MiB messages, the largest the Autobahn suite sends.
    public var echoLimits = WebSocketConnection.Limits(maxFrameSize: 16 << 20, maxMessageSize: 16 << 20)
    /// A client must complete its upgrade request within this time: 10 s is ample on
    /// any real network and keeps a stalled half-request from holding a descriptor.
    public var handshakeTimeoutSeconds = 10
    /// After this long without hearing from a client, ping it; after twice this long,
    /// drop it. 30 s stays under common NAT and proxy idle timeouts (60 s).
    public var idleTimeoutSeconds = 30
    /// Largest HTTP request head: 8 KiB, as nginx and uWS accept.
    public var maxRequestHeadBytes = 8192
    /// permessage-deflate policy.
    public var deflate = PerMessageDeflate.ServerPolicy()
    /// Rooms: presenter keys, idle expiry, conflation.
    public var rooms = LocalRoomHub.Options()
    /// Event loops (threads); one per core by default.
    public var loops: Int?

    public init() {}
}
