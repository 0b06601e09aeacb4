/// In-process connections on an embedded loop (`EventLoop.embedded()`): a channel whose far
/// end a test drives (`EmbeddedConnection`), or two channels linked to each other, a client
/// and a server, TLS included.
extension EventLoop {
    private var embeddedIO: EmbeddedIO {
        guard let embedded = io as? EmbeddedIO else { preconditionFailure("only an embedded loop has in-process connections") }
        return embedded
    }

    /// An in-process connection whose handler `makeHandler` makes, as an accepted socket's;
    /// with `tls` (a server context) the channel speaks TLS as a listener's would.
    public func connectEmbedded(peerAddress: String = "127.0.0.1", tls: TLSContext? = nil,
                                makeHandler: (Channel) -> any ChannelHandler) throws(TLSError) -> EmbeddedConnection {
        let session = try tls?.makeSession(isServer: true)
        // Registering a channel without a descriptor cannot fail.
        let channel = try! register(fd: -1, tls: session, peerAddress: peerAddress, watch: false)
        let connection = embeddedIO.connect(channel)
        channel.handler = makeHandler(channel)
        return connection
    }

    /// A client channel connected in process to the channel of `server` (from
    /// `connectEmbedded`): each reads what the other sends, as over a socket, so a test runs
    /// both ends of a connection (a TLS handshake too: `tls` is then a client context) on
    /// this loop. The handler hears `channelActive` at once; what it queues goes out when
    /// the loop steps. Returns the client's connection (its `channel` is the client).
    public func connectEmbedded(
        to server: EmbeddedConnection, tls: TLSContext? = nil, serverName: String? = nil, verifyHostName: Bool = false,
        makeHandler: (Channel) -> any ChannelHandler
    ) throws(TLSError) -> EmbeddedConnection {
        precondition(server.channel.loop === self && server.partner == nil, "a server end of this loop, not yet linked")
        let session = try tls?.makeSession(isServer: false, serverName: serverName, verifyHostName: verifyHostName)
        let channel = try! register(fd: -1, tls: session, peerAddress: server.channel.peerAddress, connecting: true, watch: false)
        let connection = embeddedIO.connect(channel)
        connection.link(server)
        channel.handler = makeHandler(channel)
        channel.writable()  // the connect finished: channelActive, and a first flush
        return connection
    }
}
