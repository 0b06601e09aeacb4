import Bytes
#if canImport(Glibc)
import Glibc
#endif

/// Carries plain-text loopback connections over TLS to one server, for a library that
/// speaks no TLS itself (Debian 12's hiredis): the library connects to `port`, and each
/// connection is forwarded through a TLS connection made by this loop.
///
/// Only sockets announced with `expect(fd:)` are forwarded; anything else that connects to
/// the port is closed, so other local users cannot borrow the TLS connection.
/// Loop thread only.
public final class TLSForwarder {
    public let port: Int
    private let loop: EventLoop
    private let target: SocketAddress
    private let serverName: String
    private let context: TLSContext
    private var expected: Set<Int> = []
    /// Why the last forwarded connection ended before the server said anything (refused,
    /// or the TLS handshake failed, e.g. an untrusted certificate), taken by the caller.
    public var lastFailure: String?

    /// Listens on a free loopback port of `loop`. Call on the loop's thread or before it runs.
    public init(loop: EventLoop, target: SocketAddress, serverName: String, context: TLSContext) throws {
        self.loop = loop
        self.target = target
        self.serverName = serverName
        self.context = context
        let (fd, port) = try Sockets.listen(host: "127.0.0.1", port: 0, backlog: 16)
        self.port = port
        var forwarder: TLSForwarder?
        try loop.addListener(Listener(fd: fd, tls: nil, makeHandler: { channel in
            forwarder?.accepted(channel) ?? Refuse()
        }))
        forwarder = self
    }

    /// Announces a socket of ours that is connecting to `port`.
    public func expect(fd: Int32) {
        if let local = Sockets.localPort(fd) { expected.insert(local) }
    }

    private func accepted(_ inner: Channel) -> any ChannelHandler {
        guard let peer = Sockets.peerPort(inner.fd), expected.remove(peer) != nil else { return Refuse() }
        let pipe = Pipe(inner: inner, forwarder: self)
        do {
            // The certificate must name the server, not just chain to a trusted root.
            pipe.outer = try loop.connect(to: target, tls: context, serverName: serverName, verifyHostName: true) { _ in pipe }
        } catch {
            return Refuse()
        }
        return pipe
    }

    /// Closes a connection nobody announced.
    private final class Refuse: ChannelHandler {
        func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {}
        func channelClosed(_ channel: Channel) {}
        func channelTick(_ channel: Channel, now: UInt64) { channel.abort() }
    }

    /// Both directions of one forwarded connection; bytes written before the TLS side is
    /// up wait in its queue. A full queue holds reading on the other side.
    private final class Pipe: ChannelHandler {
        let inner: Channel
        var outer: Channel?
        private weak var forwarder: TLSForwarder?
        private var heardFromServer = false

        init(inner: Channel, forwarder: TLSForwarder) {
            self.inner = inner
            self.forwarder = forwarder
        }

        private func other(_ channel: Channel) -> Channel? { channel === inner ? outer : inner }

        func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {
            if channel !== inner { heardFromServer = true }
            guard let other = other(channel) else { return }
            if other.enqueue(SharedBytes(copying: UnsafeRawBufferPointer(bytes))) == .overLimit { channel.holdReading(true) }
        }

        func channelWritable(_ channel: Channel) {
            other(channel)?.holdReading(false)
        }

        func channelClosed(_ channel: Channel) {
            if channel === outer, !heardFromServer, let forwarder {
                let reason = channel.connectError.map { String(cString: strerror($0)) } ?? "TLS handshake failed (is the certificate trusted and for this host?)"
                forwarder.lastFailure = "\(forwarder.serverName) (\(forwarder.target)): \(reason)"
            }
            other(channel)?.close()
        }
    }
}
