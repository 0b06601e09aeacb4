import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One TLS connection, a layer over its channel's plain stream: libssl reads and writes
/// ciphertext through the loop's I/O (`LoopBIO`), so a socket and an in-process connection
/// carry TLS alike. WANT_READ / WANT_WRITE are reported, never waited for: the channel keeps
/// them as state and retries when its connection is ready (uSockets `openssl.c`).
final class TLSSession {
    enum Outcome {
        case bytes(Int)
        case wantRead
        case wantWrite
        /// The peer sent close_notify or closed the connection.
        case closed
        case failed(TLSFailure)
    }

    private let ssl: OpaquePointer
    /// The channel whose connection carries the ciphertext; it owns this session, which
    /// lives no longer than it (so no reference count is taken per read or write).
    private unowned(unsafe) var channel: Channel?
    /// The errno of the last read or write that failed below TLS, or 0.
    private var ioError: Int32 = 0

    init(ssl: OpaquePointer) { self.ssl = ssl }

    deinit { SSL_free(ssl) }

    /// Routes the session's ciphertext through `channel`'s connection (the channel calls it
    /// when it takes the session).
    func attach(to channel: Channel) {
        self.channel = channel
        let bio = LoopBIO.make(for: self)
        SSL_set_bio(ssl, bio, bio)  // the session's SSL owns the one reference
    }

    /// Bytes already decrypted and waiting in OpenSSL (the connection may not be readable).
    var pending: Int { Int(SSL_pending(ssl)) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        return result > 0 ? .bytes(Int(result)) : outcome(result)
    }

    /// Encrypts from `bytes` in place (no copy of the plaintext is kept: after a WANT_WRITE
    /// the same bytes are offered again, from wherever the write queue holds them then).
    func write(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        ERR_clear_error()
        let result = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
        return result > 0 ? .bytes(Int(result)) : outcome(result)
    }

    /// Drives the handshake (clients use it to learn when TLS is up).
    func handshake() -> Outcome {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        return result == 1 ? .bytes(0) : outcome(result)
    }

    /// Whether the peer closed TLS with close_notify (rather than only ending the stream).
    var receivedCloseNotify: Bool { SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN != 0 }

    /// Sends close_notify (one attempt; the connection's sending side is shut down right after).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
    }

    // MARK: Ciphertext through the loop (LoopBIO's callbacks)

    /// Reads ciphertext from the connection: a count, 0 at its end, or -1 (`wouldBlock`
    /// says whether to try again when it is readable).
    func receive(into buffer: UnsafeMutableRawBufferPointer, wouldBlock: inout Bool) -> Int32 {
        guard let channel else { return 0 }
        return bioResult(wouldBlock: &wouldBlock) { () throws(SystemError) in try channel.loop.io.read(channel, into: buffer) }
    }

    /// Writes ciphertext to the connection: what it took, or -1 (`wouldBlock` says whether
    /// to try again when it is writable; libssl keeps the rest of the record meanwhile).
    func send(_ bytes: UnsafeRawBufferPointer, wouldBlock: inout Bool) -> Int32 {
        guard let channel, let base = bytes.baseAddress else { return -1 }
        let loop = channel.loop
        loop.iovecs[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: bytes.count)
        return bioResult(wouldBlock: &wouldBlock) { () throws(SystemError) in try loop.io.write(channel, loop.iovecs, count: 1) }
    }

    /// A read's or write's result as a BIO says it: the count, or -1 with `wouldBlock` set
    /// or the errno kept for `outcome`.
    @inline(__always)
    private func bioResult(wouldBlock: inout Bool, _ call: () throws(SystemError) -> IOResult<Int>) -> Int32 {
        do {
            switch try call() {
            case .done(let count): return Int32(count)
            case .wouldBlock:
                wouldBlock = true
                return -1
            }
        } catch {
            ioError = error.errno
            return -1
        }
    }

    // MARK: Outcomes

    private func outcome(_ result: Int32) -> Outcome {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            // The connection ended (0) or failed below TLS (the errno the loop's I/O saw).
            let error = ioError
            return error == 0 || error == ECONNRESET || error == EPIPE ? .closed : .failed(.other(String(cString: strerror(error))))
        default:
            let verify = SSL_get_verify_result(ssl)
            let errors = Self.drainErrors()
            if verify != X509_V_OK {
                return .failed(.untrusted(String(cString: X509_verify_cert_error_string(verify))))
            }
            // A peer that answers a ClientHello in plain text (an HTTP error) is not a TLS server.
            if errors.contains("wrong version number") || errors.contains("packet length too long") || errors.contains("record layer failure")
                || errors.contains("http request") {
                return .failed(.notTLS)
            }
            return .failed(.other(errors))
        }
    }

    static func drainErrors() -> String {
        var messages = [String]()
        while case let code = ERR_get_error(), code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            let bytes = text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            messages.append(String(decoding: bytes, as: UTF8.self))
        }
        return messages.isEmpty ? "unknown TLS error" : messages.joined(separator: "; ")
    }
}
