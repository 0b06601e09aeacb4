import Bytes
import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection (plain or TLS) owned by an event loop.
///
/// Writes are queued and flushed together at the end of the loop iteration, so every
/// frame queued for a socket in one iteration leaves in one `sendmsg`. `EPOLLOUT` is
/// watched only after a partial write. All methods must be called on the loop's thread.
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
    private struct Flags: OptionSet {
        let rawValue: UInt8
        static let watchingWritable = Flags(rawValue: 1 << 0)
        static let readingPaused = Flags(rawValue: 1 << 1)
        static let readingHeld = Flags(rawValue: 1 << 2)
        static let tlsReadNeedsWritable = Flags(rawValue: 1 << 3)
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
    @exclusivity(unchecked) private var tls: TLSSession?
    // The fields below are touched only on the loop's thread and never re-entrantly (no
    // call out happens while one is being changed), so they skip Swift's run-time
    // exclusivity check (with the other fields a delivery touches, a third of the server's
    // instructions per delivery: BENCHMARKS.md).
    @exclusivity(unchecked) private var queue = WriteQueue()
    /// The newest replaceable message, waiting until the socket has taken everything before it.
    @exclusivity(unchecked) private var latest: SharedBytes?
    /// The socket (an in-process channel has none: its `LoopIO` knows its far end by `id`).
    let fd: Int32
    @exclusivity(unchecked) private(set) var state: State = .open
    /// Ticks since a graceful close began (see `lingerTicks`).
    private var closingTicks: UInt8 = 0
    @exclusivity(unchecked) private var flags: Flags = []
    /// The errno of a failed connect, or 0 (Linux's errno values fit in a byte).
    private var connectErrno: UInt8 = 0

    /// How long a graceful close may take to flush and hear the peer close: 2 ticks of the
    /// loop's coarse timer, so 2 to 3 s (no deadline is stored per connection).
    static let lingerTicks: UInt8 = 2

    init(id: UInt64, fd: Int32, tls: TLSSession?, peerAddress: String, loop: EventLoop) {
        self.id = id
        self.fd = fd
        self.tls = tls
        self.peerAddress = peerAddress
        self.loop = loop
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
        if let waiting = latest {  // keep the order in which messages were produced
            queue.append(waiting)
            latest = nil
        }
        queue.append(bytes)
        flags[.queuedSinceTick] = true
        loop.markDirty(self)
        if queue.byteCount > loop.watermarks.high {
            pauseReading()
            return .overLimit
        }
        return .queued
    }

    /// Queues the newest version of a replaceable message (conflation). It waits in a
    /// one-message slot until the socket has taken everything queued before it; a newer
    /// one replaces it there. A slow reader thus holds at most one stale message and
    /// always ends with the newest. Returns true when an older message was replaced.
    @discardableResult
    public func enqueueLatest(_ bytes: SharedBytes) -> Bool {
        let loop = self.loop
        loop.assertInEventLoop()
        guard state == .open else { return false }
        let replaced = latest != nil
        latest = bytes
        flags[.queuedSinceTick] = true
        loop.markDirty(self)
        return replaced
    }

    /// Caps the kernel's send buffer for this socket, and with `unsent` the bytes it holds
    /// that the peer's window has not yet let out (TCP_NOTSENT_LOWAT: past it a write takes
    /// no more and the rest waits in the write queue, where conflation can replace it). Capped
    /// buffers keep stale bytes from piling up below the write queue.
    public func setSendBuffer(_ size: SendBufferSize) {
        loop.io.setSendBuffer(self, size)
    }

    /// Closes gracefully: flush the queue, shut down the sending side (after TLS
    /// close_notify), read until the peer closes, then release the socket. Gives up
    /// after `lingerTicks`.
    public func close() {
        loop.assertInEventLoop()
        if state == .connecting { closeNow(); return }
        guard state == .open else { return }
        state = .flushing
        closingTicks = 0
        resumeReading()
        if queue.isEmpty { finishFlushing() } else { loop.markDirty(self) }
    }

    /// Closes at once, dropping anything queued.
    public func abort() {
        loop.assertInEventLoop()
        closeNow()
    }

    /// Writes as much of the queue as the socket takes.
    func flush() {
        switch state {
        case .open, .flushing: break
        case .connecting, .lingering, .closed: return
        }
        repeat {
            if queue.isEmpty, let waiting = latest {
                queue.append(waiting)
                latest = nil
            }
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

    private var isClosed: Bool { state == .closed }

    /// Writes queued bytes until the socket takes no more; returns the errno of a failed
    /// write (the caller closes), or 0.
    private func writePlain() -> Int32 {
        let loop = self.loop
        while !queue.isEmpty {
            let count = queue.gather(into: loop.iovecs)
            let result: IOResult<Int>
            do {
                result = try loop.io.write(self, loop.iovecs, count: count)
            } catch {
                return error.errno
            }
            guard case .done(let written) = result else { return 0 }
            let expected = (0..<count).reduce(0) { $0 + loop.iovecs[$1].iov_len }
            queue.consume(written)
            if written < expected { return 0 }
        }
        return 0
    }

    private func flushTLS() {
        guard let tls else { return }
        while let chunk = queue.first {
            switch tls.write(chunk) {
            case .bytes(let written): queue.consume(written)
            case .wantWrite: return
            case .wantRead:
                flags[.tlsWriteNeedsReadable] = true  // the handshake must hear the peer first
                return
            case .closed: closeNow(); return
            case .failed(let failure): failed(failure); return
            }
        }
    }

    private func finishFlushing() {
        tls?.shutdown()
        loop.io.shutdownSending(self)
        state = .lingering
        setWatchingWritable(false)
    }

    // MARK: Reading

    /// Reads once (TLS: until OpenSSL holds nothing more) and hands the bytes on.
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
            let count: Int
            if let tls {
                switch tls.read(into: buffer) {
                case .bytes(let n): count = n
                case .wantRead: return
                case .wantWrite:
                    flags[.tlsReadNeedsWritable] = true
                    setWatchingWritable(true)
                    return
                case .failed(let failure):
                    failed(failure)
                    return
                case .closed:
                    closeNow()
                    return
                }
            } else {
                do {
                    guard case .done(let n) = try loop.io.read(self, into: buffer) else { return }
                    count = n
                } catch {
                    closeNow()
                    return
                }
                if count == 0 { closeNow(); return }
            }
            switch state {
            case .open, .flushing: handler?.channelRead(self, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
            case .connecting, .lingering, .closed: break  // discarded while waiting for the peer to close
            }
            guard !isClosed, let tls, tls.pending > 0, !flags[.readingPaused], !flags[.readingHeld] else { return }
        }
    }

    /// The socket became writable.
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

    /// Stops (or resumes) reading from the socket on the owner's request, e.g. to play a
    /// slow reader in a load test. Independent of the backpressure pause.
    public func holdReading(_ hold: Bool) {
        loop.assertInEventLoop()
        guard hold != flags[.readingHeld] else { return }
        flags[.readingHeld] = hold
        updateInterest()
    }

    private func pauseReading() {
        guard !flags[.readingPaused] else { return }
        flags[.readingPaused] = true
        updateInterest()
    }

    private func resumeReading() {
        guard flags[.readingPaused] else { return }
        flags[.readingPaused] = false
        updateInterest()
    }

    private func setWatchingWritable(_ watch: Bool) {
        guard watch != flags[.watchingWritable] else { return }
        flags[.watchingWritable] = watch
        updateInterest()
    }

    private func updateInterest() {
        guard !isClosed else { return }
        loop.io.setInterest(self, readable: !flags[.readingPaused] && !flags[.readingHeld], writable: flags[.watchingWritable])
    }

    func startConnecting() {
        state = .connecting
        flags[.watchingWritable] = true
    }

    /// A plain client socket whose connect may have finished already (on loopback it has
    /// by the time `connect` returns): the handler hears `channelActive` now and what it
    /// queues is sent at once. Sent: the socket is open and watched for reading only.
    /// EAGAIN: still connecting, so it is watched for writable as usual. Any other error
    /// is the connect's, reported on the loop's next turn. This saves a loop iteration,
    /// a `getsockopt` and an `epoll_ctl` per connection.
    func connectOptimistically() {
        flags[.announcedActive] = true
        handler?.channelActive(self)
        guard state == .connecting else { return }  // the handler gave up on it
        var failure: Int32 = 0
        if !queue.isEmpty {
            let before = queue.byteCount
            failure = writePlain()
            if failure == 0 && queue.byteCount < before { state = .open }
        }
        if state == .open { flags[.watchingWritable] = !queue.isEmpty }
        do {
            try loop.io.add(self, writable: flags[.watchingWritable])
        } catch {
            failure = error.errno
        }
        if failure != 0 {
            connectErrno = UInt8(clamping: failure)
            loop.schedule(after: 0) { [self] in closeNow() }
        }
    }

    /// An accepted socket, registered unwatched: its first bytes are read at once (the
    /// listener accepts a connection when they arrive), then it is watched. This saves an
    /// epoll wake-up per connection; a socket with nothing to read yet (a silent client
    /// accepted after the listener's wait) costs one `recv` that finds nothing.
    func readOptimistically() {
        readable()
        guard !isClosed else { return }
        do {
            try loop.io.add(self, writable: flags[.watchingWritable])
            if flags[.readingPaused] || flags[.readingHeld] { updateInterest() }
        } catch {
            closeNow()
        }
    }

    // MARK: Time and teardown

    func tick(now: UInt64) {
        switch state {
        case .open, .connecting:
            if queue.isEmpty && !flags[.queuedSinceTick] { queue.removeAll() }
            flags[.queuedSinceTick] = false
            handler?.channelTick(self, now: now)
        case .flushing, .lingering:
            closingTicks += 1
            if closingTicks > Self.lingerTicks { closeNow() }
        case .closed:
            break
        }
    }

    /// Peer hung up or errored.
    func hangUp() { closeNow() }

    /// Writes `bytes` to the socket as they are, past TLS (one best-effort, non-blocking
    /// write): for a peer that does not speak TLS, so that it hears in plain text why not.
    public func sendUnencrypted(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        loop.io.sendUnencrypted(self, bytes)
    }

    private func failed(_ failure: TLSFailure) {
        handler?.channelFailed(self, failure)
        closeNow()
    }

    private func closeNow() {
        guard !isClosed else { return }
        state = .closed
        queue.removeAll()
        latest = nil
        loop.unregister(self)
        tls = nil
        loop.io.close(self)
        let handler = self.handler
        self.handler = nil
        handler?.channelClosed(self)
    }
}

extension OptionSet {
    /// Whether `member` is in the set; setting it inserts or removes it.
    subscript(member: Element) -> Bool {
        @inline(__always) get { contains(member) }
        @inline(__always) set { if newValue { insert(member) } else { remove(member) } }
    }
}
