#if canImport(Glibc)
import Glibc
#endif

/// The plain stream: bytes to and from the loop's I/O as they are (TLS, when there is a
/// session, sits on the same I/O: `Channel+TLS`), and the optimistic first read and write
/// of a new connection.
extension Channel {
    /// Writes queued bytes until the connection takes no more; returns the errno of a failed
    /// write (the caller closes), or 0.
    func writePlain() -> Int32 {
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

    /// Reads once into `buffer`: the count, or nil when there is nothing (or the channel
    /// closed: at the end of the stream or on an error).
    func readPlain(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let count: Int
        do {
            guard case .done(let n) = try loop.io.read(self, into: buffer) else { return nil }
            count = n
        } catch {
            closeNow()
            return nil
        }
        if count == 0 {
            closeNow()
            return nil
        }
        return count
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
}
