#if canImport(Glibc)
import Glibc
#endif

/// A listening socket on one loop; each accepted connection gets a handler from `makeHandler`.
final class Listener {
    let fd: Int32
    let tls: TLSContext?
    let makeHandler: (Channel) -> any ChannelHandler

    init(fd: Int32, tls: TLSContext?, makeHandler: @escaping (Channel) -> any ChannelHandler) {
        self.fd = fd
        self.tls = tls
        self.makeHandler = makeHandler
    }

    deinit { close(fd) }

    /// Takes an accepted socket: its channel and handler, then its first bytes at once.
    func adopt(fd: Int32, peer: String, on loop: EventLoop) {
        do {
            let session = try tls?.makeSession(isServer: true)
            let channel = try loop.register(fd: fd, tls: session, peerAddress: peer, watch: false)
            channel.handler = makeHandler(channel)
            channel.readOptimistically()
        } catch {
            close(fd)
        }
    }
}
