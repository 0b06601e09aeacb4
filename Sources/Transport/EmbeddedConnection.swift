#if canImport(Glibc)
import Glibc
#endif

/// The far end of an in-process channel (in the spirit of SwiftNIO's `EmbeddedChannel`): a
/// test writes bytes to the channel's handler and reads what the channel sent, on a loop it
/// steps itself (`EventLoop.embedded()`), with no socket, thread or process.
public final class EmbeddedConnection {
    /// The channel whose peer this is.
    public let channel: Channel
    /// Bytes the channel sent that `read()` has not taken.
    private var sent: [UInt8] = []
    /// Bytes written to the channel while it did not read (backpressure), in order.
    private var unread: [UInt8] = []
    /// How many more bytes the channel may send before this end is "full" (a slow reader):
    /// nil takes everything. What does not fit stays in the channel's write queue.
    public var window: Int?
    /// The channel shut down its sending side (a graceful close).
    public internal(set) var sendingShutDown = false
    /// The channel is closed.
    public internal(set) var closed = false

    init(channel: Channel) { self.channel = channel }

    /// Hands `bytes` to the channel's handler, as a socket read would (in 64 KiB reads).
    public func write(_ bytes: [UInt8]) {
        unread += bytes
        deliver()
    }

    /// Takes what the channel has sent so far.
    public func read() -> [UInt8] {
        defer { sent.removeAll() }
        return sent
    }

    /// Opens the window by `bytes` (nil: without limit) and lets the channel send again.
    public func acceptMore(_ bytes: Int?) {
        window = bytes.map { (window ?? 0) + $0 }
        channel.writable()
    }

    /// The peer hangs up.
    public func hangUp() { channel.hangUp() }

    func deliver() {
        let buffer = channel.loop.readBuffer
        while !unread.isEmpty, channel.acceptsInput {
            let count = min(buffer.count, unread.count)
            unread.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: count) }
            unread.removeFirst(count)
            channel.handler?.channelRead(channel, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Takes queued bytes as a socket would, up to the window; 0 like a write that succeeded.
    func take(_ queue: inout WriteQueue, iovecs: UnsafeMutableBufferPointer<iovec>) -> Int32 {
        while !queue.isEmpty {
            let count = queue.gather(into: iovecs)
            var taken = 0
            for index in 0..<count {
                let vector = iovecs[index]
                let length = min(vector.iov_len, (window ?? Int.max) - taken)
                guard length > 0, let base = vector.iov_base else { break }
                sent += UnsafeRawBufferPointer(start: base, count: length)
                taken += length
            }
            queue.consume(taken)
            if let window { self.window = window - taken }
            if taken == 0 || window == 0 { return 0 }
        }
        return 0
    }
}
