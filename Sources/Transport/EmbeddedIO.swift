import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// A loop's connections in process, for tests (in the spirit of SwiftNIO's
/// `EmbeddedEventLoop`): no socket, listener or thread; each channel's far end is an
/// `EmbeddedConnection` the test writes to and reads from, and the loop steps only when the
/// test calls `EventLoop.advance`, on the test's thread, by the loop's own clock.
final class EmbeddedIO: LoopIO {
    /// The far ends, by channel id (a channel stores nothing for them).
    private var connections: [UInt64: EmbeddedConnection] = [:]
    /// In the order they connected, so that a step delivers in a stable order.
    private var order: [EmbeddedConnection] = []
    /// Other threads' tasks wake a test waiting in `advance(until:)`.
    private let wakeDescriptor: Int32

    init() throws(SystemError) {
        wakeDescriptor = try syscallChecked("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
    }

    deinit { Glibc.close(wakeDescriptor) }

    func connect(_ channel: Channel) -> EmbeddedConnection {
        let connection = EmbeddedConnection(channel: channel)
        connections[channel.id] = connection
        order.append(connection)
        return connection
    }

    /// Hands every connection's unread bytes to its channel (waiting first, up to the timeout,
    /// for another thread's wake-up when asked to).
    func poll(_ loop: EventLoop, timeoutMilliseconds: Int32) {
        if timeoutMilliseconds > 0 {
            var descriptor = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
            if Glibc.poll(&descriptor, 1, timeoutMilliseconds) > 0 {
                var value: UInt64 = 0
                _ = Glibc.read(wakeDescriptor, &value, 8)
            }
        }
        order.removeAll { $0.closed }
        for connection in order { connection.deliver() }
    }

    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeDescriptor, &one, 8)
    }

    func add(_ channel: Channel, writable: Bool) throws(SystemError) {}

    /// Reading resumed: what waited is delivered on the loop's next step.
    func setInterest(_ channel: Channel, readable: Bool, writable: Bool) {}

    func read(_ channel: Channel, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        guard let connection = connections[channel.id] else { return .done(0) }
        return connection.take(into: buffer)
    }

    func write(_ channel: Channel, _ vectors: UnsafeMutableBufferPointer<iovec>, count: Int) throws(SystemError) -> IOResult<Int> {
        guard let connection = connections[channel.id] else { throw SystemError(call: "send", errno: EPIPE) }
        return connection.accept(vectors, count: count)
    }

    func connectError(_ channel: Channel) -> Int32 { 0 }

    func shutdownSending(_ channel: Channel) {
        guard let connection = connections[channel.id] else { return }
        connection.sendingShutDown = true
        connection.partner?.partnerFinished()
    }

    func close(_ channel: Channel) {
        guard let connection = connections.removeValue(forKey: channel.id) else { return }
        connection.closed = true
        connection.partner?.partnerFinished()
    }

    /// Whether linked channels sent each other something since the last call: the loop
    /// steps again to deliver it, so that one step carries a whole exchange (a TLS handshake)
    /// through, as far as it goes without the test.
    func takeArrivals() -> Bool {
        var any = false
        for connection in order where connection.arrived {
            connection.arrived = false
            any = true
        }
        return any
    }

    func setSendBuffer(_ channel: Channel, _ size: SendBufferSize) {}

    func addListener(_ listener: Listener, loop: EventLoop) throws(SystemError) {
        throw SystemError(call: "listen (an embedded loop has no sockets)", errno: EOPNOTSUPP)
    }

    func removeListeners() {}

    func tick() {}

    func watch(fd: Int32, loop: EventLoop, handler: @escaping (Bool, Bool) -> Void) throws(SystemError) -> FileWatch {
        throw SystemError(call: "watch (an embedded loop has no descriptors)", errno: EOPNOTSUPP)
    }

    func update(_ watch: FileWatch) {}

    func cancel(_ watch: FileWatch) {}
}
