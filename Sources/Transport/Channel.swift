import Bytes
import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// One connection (plain TCP, or TLS over it) owned by an event loop.
///
/// Writes are queued and flushed together at the end of the loop iteration, so every
/// frame queued for a socket in one iteration leaves in one `sendmsg`. `EPOLLOUT` is
/// watched only after a partial write. All methods must be called on the loop's thread.
/// Its concepts live a file each: the plain stream (`Channel+Plain`), TLS over it
/// (`Channel+TLS`), the conflation slot (`Channel+Conflation`) and the close sequence
/// (`Channel+Closing`).
public final class Channel {
    /// Backpressure marks, in bytes of queued output.
    public struct Watermarks: Sendable {
        /// Over this, `enqueue` answers `.overLimit` and reading pauses.
        public var high: Int
        /// Under this again, reading resumes and the handler hears `channelWritable`.
        public var low: Int
        /// 1 MiB / 256 KiB: a few large messages in flight, bounded per connection.
        public init(high: Int = 1 << 20, low: Int = 256 << 10) {
            self.high = high
            self.low = low
        }
    }

    enum State: UInt8 {
        /// A client socket whose non-blocking connect has not finished.
        case connecting
        case open
        /// Flushing what is queued, then shutting down the sending side.
        case flushing
        /// Sent everything and shut down; reading until the peer closes too.
        case lingering
        case closed
    }

    /// Yes-or-no state, one bit each (there is one channel per connection).
    struct Flags: OptionSet {
        let rawValue: UInt8
        static let watchingWritable = Flags(rawValue: 1 << 0)
        static let readingPaused = Flags(rawValue: 1 << 1)
        static let readingHeld = Flags(rawValue: 1 << 2)
        /// TLS: a read needs the connection writable first (libssl's WANT_WRITE).
        static let tlsReadNeedsWritable = Flags(rawValue: 1 << 3)
        /// TLS: a write needs the connection readable first (WANT_READ: the handshake).
        static let tlsWriteNeedsReadable = Flags(rawValue: 1 << 4)
        /// Something was queued since the last tick; a queue quiet for a whole tick gives its
        /// storage back, so idle connections hold none and busy ones never reallocate.
        static let queuedSinceTick = Flags(rawValue: 1 << 5)
        static let dirty = Flags(rawValue: 1 << 6)
        /// The handler has heard `channelActive` (a client channel says it once).
        static let announcedActive = Flags(rawValue: 1 << 7)
    }

    // Stored large to small: one channel per connection, so its size is per-connection memory.
    public let id: UInt64
    /// The peer's address (without port), for logs and per-address limits.
    public let peerAddress: String
    /// Its loop, held strongly: a constant, so reading it costs no reference count (an
    /// `unowned` one cost two atomic operations per send). The loop holds its channels only
    /// while they are open and lets go of all of them, and of its tasks and timers, when it
    /// stops, so no cycle outlives a loop.
    public let loop: EventLoop
    // Loop-thread only, read or set whole (a call through `handler` works on a copy).
    @exclusivity(unchecked) public var handler: (any ChannelHandler)?
    @exclusivity(unchecked) var tls: TLSSession?
    // The fields below are touched only on the loop's thread and never re-entrantly (no
    // call out happens while one is being changed), so they skip Swift's run-time
    // exclusivity check (with the other fields a delivery touches, a third of the server's
    // instructions per delivery: BENCHMARKS.md).
    @exclusivity(unchecked) var queue = WriteQueue()
    /// The newest replaceable message, waiting until the socket has taken everything before it.
    @exclusivity(unchecked) var latest: SharedBytes?
    /// The socket (an in-process channel has none: its `LoopIO` knows its far end by `id`).
    let fd: Int32
    @exclusivity(unchecked) var state: State = .open
    /// Ticks since a graceful close began (see `lingerTicks`).
    var closingTicks: UInt8 = 0
    @exclusivity(unchecked) var flags: Flags = []
    /// The errno of a failed connect, or 0 (Linux's errno values fit in a byte).
    var connectErrno: UInt8 = 0

    init(id: UInt64, fd: Int32, tls: TLSSession?, peerAddress: String, loop: EventLoop) {
        self.id = id
        self.fd = fd
        self.tls = tls
        self.peerAddress = peerAddress
        self.loop = loop
        tls?.attach(to: self)
    }

    /// Backpressure marks: its loop's (`EventLoop.watermarks`), the same for every channel,
    /// so that no connection stores its own.
    public var watermarks: Watermarks { loop.watermarks }
    public var isTLS: Bool { tls != nil }
    /// The errno of a failed connect, if that is how the channel ended.
    public var connectError: Int32? { connectErrno == 0 ? nil : Int32(connectErrno) }

    var isDirty: Bool {
        get { flags[.dirty] }
        set { flags[.dirty] = newValue }
    }

    public var isOpen: Bool { state == .open }

    var isClosed: Bool { state == .closed }

    /// Whether a read now would reach the handler (not paused, held or closed).
    var acceptsInput: Bool { (state == .open || state == .flushing) && !flags[.readingPaused] && !flags[.readingHeld] }

    /// Bytes queued and not yet written (the conflation slot included).
    public var queuedBytes: Int { queue.byteCount + (latest?.count ?? 0) }

    // MARK: Writing

    /// Queues bytes to send; they leave at the end of this loop iteration.
    @discardableResult
    public func enqueue(_ bytes: SharedBytes) -> SendStatus {
        let loop = self.loop
        loop.assertInEventLoop()
        switch state {
        case .open, .connecting: break
        default: return .dropped
        }
        queueLatest()  // keep the order in which messages were produced
        queue.append(bytes)
        flags[.queuedSinceTick] = true
        loop.markDirty(self)
        if queue.byteCount > loop.watermarks.high {
            pauseReading()
            return .overLimit
        }
        return .queued
    }

    /// Caps the kernel's send buffer for this socket, and with `unsent` the bytes it holds
    /// that the peer's window has not yet let out (TCP_NOTSENT_LOWAT: past it a write takes
    /// no more and the rest waits in the write queue, where conflation can replace it). Capped
    /// buffers keep stale bytes from piling up below the write queue.
    public func setSendBuffer(_ size: SendBufferSize) {
        loop.io.setSendBuffer(self, size)
    }

    /// Writes as much of the queue as the connection takes.
    func flush() {
        switch state {
        case .open, .flushing: break
        case .connecting, .lingering, .closed: return
        }
        repeat {
            if queue.isEmpty { queueLatest() }
            if tls != nil {
                flushTLS()
            } else if writePlain() != 0 {
                closeNow()
            }
            guard !isClosed else { return }
        } while queue.isEmpty && latest != nil
        if queue.isEmpty {
            setWatchingWritable(flags[.tlsReadNeedsWritable])
            if state == .flushing { finishFlushing(); return }
        } else {
            setWatchingWritable(true)
        }
        if flags[.readingPaused] && queue.byteCount <= loop.watermarks.low, state == .open {
            resumeReading()
            handler?.channelWritable(self)
        }
    }

    // MARK: Readiness

    /// Reads once (TLS: until libssl holds nothing more decrypted) and hands the bytes on.
    func readable() {
        if state == .connecting { return }
        defer {
            if flags[.tlsWriteNeedsReadable], !isClosed {
                flags[.tlsWriteNeedsReadable] = false
                flush()
            }
        }
        let buffer = loop.readBuffer
        while true {
            guard let count = tls != nil ? readTLS(into: buffer) : readPlain(into: buffer) else { return }
            switch state {
            case .open, .flushing: handler?.channelRead(self, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
            case .connecting, .lingering, .closed: break  // discarded while waiting for the peer to close
            }
            guard !isClosed, let tls, tls.pending > 0, !flags[.readingPaused], !flags[.readingHeld] else { return }
        }
    }

    /// The connection became writable.
    func writable() {
        if state == .connecting {
            let error = loop.io.connectError(self)
            guard error == 0 else {
                connectErrno = UInt8(clamping: error)
                closeNow()
                return
            }
            state = .open
            setWatchingWritable(false)
            if !flags[.announcedActive] {
                flags[.announcedActive] = true
                handler?.channelActive(self)
            }
            guard !isClosed else { return }
        }
        if flags[.tlsReadNeedsWritable] {
            flags[.tlsReadNeedsWritable] = false
            readable()
            guard !isClosed else { return }
        }
        flush()
    }

    // MARK: Interest

    /// Stops (or resumes) reading from the socket on the owner's request, e.g. to play a
    /// slow reader in a load test. Independent of the backpressure pause.
    public func holdReading(_ hold: Bool) {
        loop.assertInEventLoop()
        guard hold != flags[.readingHeld] else { return }
        flags[.readingHeld] = hold
        updateInterest()
    }

    func pauseReading() {
        guard !flags[.readingPaused] else { return }
        flags[.readingPaused] = true
        updateInterest()
    }

    func resumeReading() {
        guard flags[.readingPaused] else { return }
        flags[.readingPaused] = false
        updateInterest()
    }

    func setWatchingWritable(_ watch: Bool) {
        guard watch != flags[.watchingWritable] else { return }
        flags[.watchingWritable] = watch
        updateInterest()
    }

    func updateInterest() {
        guard !isClosed else { return }
        loop.io.setInterest(self, readable: !flags[.readingPaused] && !flags[.readingHeld], writable: flags[.watchingWritable])
    }

    // MARK: Time

    func tick(now: UInt64) {
        switch state {
        case .open, .connecting:
            if queue.isEmpty && !flags[.queuedSinceTick] { queue.removeAll() }
            flags[.queuedSinceTick] = false
            handler?.channelTick(self, now: now)
        case .flushing, .lingering:
            tickClosing()
        case .closed:
            break
        }
    }
}

extension OptionSet {
    /// Whether `member` is in the set; setting it inserts or removes it.
    subscript(member: Element) -> Bool {
        @inline(__always) get { contains(member) }
        @inline(__always) set { if newValue { insert(member) } else { remove(member) } }
    }
}
