#if canImport(Glibc)
import Glibc
#endif

/// The far end of an in-process channel (in the spirit of SwiftNIO's `EmbeddedChannel`): a
/// test writes bytes to the channel and reads what the channel sent, on a loop it steps itself
/// (`EventLoop.embedded()`), with no socket, thread or process. The channel reads and writes
/// it through the same code as a socket, TLS included. Its far end may instead be another
/// channel on the loop (`EventLoop.connectEmbedded(to:)`): a client and a server in process.
public final class EmbeddedConnection {
    /// The channel whose peer this is.
    public let channel: Channel
    /// Bytes the channel sent that `read()` has not taken.
    private var sent: [UInt8] = []
    /// Bytes written to the channel that it has not read yet (it reads 64 KiB at a time, and
    /// not at all while its reading is paused), in order.
    private var unread: [UInt8] = []
    private var unreadStart = 0
    /// How many more bytes the channel may send before this end is "full" (a slow reader):
    /// nil takes everything. What does not fit stays in the channel's write queue.
    public var window: Int?
    /// The channel shut down its sending side (a graceful close).
    public internal(set) var sendingShutDown = false
    /// The channel is closed.
    public internal(set) var closed = false
    /// The other channel's connection when two channels are linked: what this channel sends
    /// is that one's to read (not `read()`'s).
    weak var partner: EmbeddedConnection?
    /// The far end sends no more (a linked channel shut down or closed): once the unread
    /// bytes are taken, the channel reads the end of the stream.
    var farEndFinished = false
    /// Bytes or the end arrived from a linked channel since the loop last looked
    /// (`EmbeddedIO.takeArrivals`): the loop steps again to deliver them.
    var arrived = false

    init(channel: Channel) { self.channel = channel }

    /// Hands `bytes` to the channel, as a socket read would (in 64 KiB reads).
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

    /// Links two connections: each channel reads what the other sends.
    func link(_ other: EmbeddedConnection) {
        partner = other
        other.partner = self
    }

    /// The linked channel shut down its sending side or closed.
    func partnerFinished() {
        farEndFinished = true
        arrived = true
    }

    /// Whether the channel would take a read now: bytes or the end wait, and it reads (a
    /// closing channel reads too, to hear the peer close).
    private var hasInput: Bool {
        !closed && (unreadStart < unread.count || farEndFinished) && (channel.acceptsInput || channel.state == .lingering)
    }

    /// Lets the channel read while it has something to read and reads.
    func deliver() {
        while hasInput {
            let before = unreadStart
            channel.readable()
            if unreadStart == before { break }  // the channel took nothing: it reads on a later step
        }
        if unreadStart == unread.count, unreadStart > 0 {
            unread.removeAll()
            unreadStart = 0
        }
    }

    /// A socket's `recv`: up to `buffer.count` unread bytes, or would-block.
    func take(into buffer: UnsafeMutableRawBufferPointer) -> IOResult<Int> {
        let count = min(buffer.count, unread.count - unreadStart)
        guard count > 0 else { return farEndFinished ? .done(0) : .wouldBlock }
        unread.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + unreadStart, byteCount: count) }
        unreadStart += count
        return .done(count)
    }

    /// A socket's `sendmsg`: what fits in the window, or would-block when nothing does.
    func accept(_ vectors: UnsafeMutableBufferPointer<iovec>, count: Int) -> IOResult<Int> {
        var taken = 0
        for index in 0..<count {
            let vector = vectors[index]
            let length = min(vector.iov_len, (window ?? Int.max) - taken)
            guard length > 0, let base = vector.iov_base else { break }
            if let partner {
                partner.unread += UnsafeRawBufferPointer(start: base, count: length)
                partner.arrived = true
            } else {
                sent += UnsafeRawBufferPointer(start: base, count: length)
            }
            taken += length
        }
        if let window { self.window = window - taken }
        return taken == 0 ? .wouldBlock : .done(taken)
    }
}
