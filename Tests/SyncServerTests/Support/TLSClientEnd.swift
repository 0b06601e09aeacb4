import Bytes
import Transport

/// The client side of an in-process wss connection: a TLS client channel on the embedded
/// loop, linked to a server's in-process connection (the server's end speaks TLS as an
/// accepted socket would). It keeps the plaintext it read until `read()` takes it.
final class TLSClientEnd: ChannelHandler {
    private(set) var connection: EmbeddedConnection?
    private var received: [UInt8] = []
    private let first: [UInt8]
    private(set) var failure: TLSFailure?
    private(set) var closed = false

    /// Connects to `server`'s end and sends `first` (which starts the handshake).
    init(linkedTo server: EmbeddedConnection, on loop: EventLoop, tls: TLSContext, serverName: String = "localhost", first: [UInt8]) throws {
        self.first = first
        connection = try loop.connectEmbedded(to: server, tls: tls, serverName: serverName, verifyHostName: true) { _ in self }
    }

    /// Takes the plaintext read so far.
    func read() -> [UInt8] {
        defer { received.removeAll() }
        return received
    }

    func write(_ bytes: [UInt8]) { connection?.channel.enqueue(SharedBytes(bytes)) }

    func channelActive(_ channel: Channel) { channel.enqueue(SharedBytes(first)) }
    func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) { received += bytes }
    func channelFailed(_ channel: Channel, _ failure: TLSFailure) { self.failure = failure }
    func channelClosed(_ channel: Channel) { closed = true }
}
