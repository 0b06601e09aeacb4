import Transport

#if canImport(Glibc)
import Glibc
#endif

extension RedisConnection {
    /// The transport's handler for one connection; a link its owner let go of is inert.
    final class Link: ChannelHandler {
        weak var owner: RedisConnection?
        var channel: Channel?
        private(set) var isOpen = true
        private var tlsFailure: TLSFailure?

        init(owner: RedisConnection) { self.owner = owner }

        func channelActive(_ channel: Channel) { self.channel = channel }

        func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {
            self.channel = channel
            owner?.received(UnsafeRawBufferPointer(bytes))
        }

        func channelFailed(_ channel: Channel, _ failure: TLSFailure) { tlsFailure = failure }

        func channelClosed(_ channel: Channel) {
            isOpen = false
            self.channel = nil
            guard let owner, owner.link === self else { return }
            let endpoint = owner.endpoint
            let reason = if let tlsFailure {
                "\(endpoint.host):\(endpoint.port): \(tlsFailure)"
            } else if let errno = channel.connectError {
                "\(endpoint.host):\(endpoint.port): \(String(cString: strerror(errno)))"
            } else {
                "connection closed"
            }
            owner.closed(reason)
        }

        /// The server is shutting down: its Redis connections simply close.
        func channelShutdownRequested(_ channel: Channel) { channel.close() }
    }
}
