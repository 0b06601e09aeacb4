#if canImport(Glibc)
import Glibc
#endif

/// TLS over the plain stream: plaintext from the write queue is encrypted in place and its
/// records go out through the loop's I/O (`LoopBIO`); ciphertext read the same way is
/// decrypted into the loop's read buffer. libssl's WANT_READ / WANT_WRITE become the flags
/// `tlsWriteNeedsReadable` / `tlsReadNeedsWritable`, which `readable()` and `writable()` honour.
extension Channel {
    /// Encrypts and sends queued plaintext until the connection takes no more (the part of
    /// a record it did not take waits in libssl, and the chunk stays queued until it has).
    func flushTLS() {
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

    /// Decrypts what has arrived into `buffer`: the count, or nil when there is nothing yet
    /// (the flags say what libssl waits for) or the channel closed.
    func readTLS(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard let tls else { return nil }
        switch tls.read(into: buffer) {
        case .bytes(let count): return count
        case .wantRead: return nil
        case .wantWrite:
            flags[.tlsReadNeedsWritable] = true
            setWatchingWritable(true)
            return nil
        case .failed(let failure):
            failed(failure)
            return nil
        case .closed:
            closeNow()
            return nil
        }
    }

    /// Writes `bytes` as they are, past TLS (one best-effort write through the loop's I/O):
    /// for a peer that does not speak TLS, so that it hears in plain text why not.
    public func sendUnencrypted(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        let loop = self.loop
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            loop.iovecs[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: raw.count)
            _ = try? loop.io.write(self, loop.iovecs, count: 1)
        }
    }

    /// TLS failed: the handler hears why, then the connection closes.
    func failed(_ failure: TLSFailure) {
        handler?.channelFailed(self, failure)
        closeNow()
    }
}
