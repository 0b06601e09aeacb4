import COpenSSL

/// The BIO through which a TLS session's ciphertext moves: its reads and writes are the
/// channel's reads and writes through the loop's I/O (a socket's `recv`/`send`, or an
/// in-process connection), as uSockets' `openssl.c` feeds libssl from the loop rather than
/// giving it the socket. It holds no buffer: what the connection does not take yet stays in
/// libssl's record buffer (released when idle), so a TLS connection costs no more memory
/// than it did on a socket BIO, and neither direction copies the ciphertext once more.
enum LoopBIO {
    /// One method table for every session (OpenSSL never frees it before exit).
    nonisolated(unsafe) static let method: OpaquePointer = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "scrollsync loop") else {
            fatalError("BIO_meth_new failed: out of memory")
        }
        _ = BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        _ = BIO_meth_set_read(method) { bio, data, length in
            guard let bio, let data, length > 0 else { return 0 }
            BIO_clear_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY)
            var wouldBlock = false
            let buffer = UnsafeMutableRawBufferPointer(start: data, count: Int(length))
            let result = session(of: bio)._withUnsafeGuaranteedRef { $0.receive(into: buffer, wouldBlock: &wouldBlock) }
            if wouldBlock { BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY) }
            if result == 0 { BIO_set_flags(bio, BIO_FLAGS_IN_EOF) }
            return result
        }
        _ = BIO_meth_set_write(method) { bio, data, length in
            guard let bio, let data, length > 0 else { return 0 }
            BIO_clear_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY)
            var wouldBlock = false
            let bytes = UnsafeRawBufferPointer(start: data, count: Int(length))
            let result = session(of: bio)._withUnsafeGuaranteedRef { $0.send(bytes, wouldBlock: &wouldBlock) }
            if wouldBlock { BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY) }
            return result
        }
        // As a socket BIO answers: writes go out as they are made (a flush has nothing to do and
        // says it succeeded), and the end of the stream is told, so that libssl reports an end
        // without close_notify as a truncation ("unexpected eof while reading").
        _ = BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: 1
            case BIO_CTRL_EOF: bio.map { BIO_test_flags($0, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0 } ?? 0
            default: 0
            }
        }
        return method
    }()

    /// A BIO for `session` (which outlives it: the session's SSL frees it).
    static func make(for session: TLSSession) -> OpaquePointer {
        guard let bio = BIO_new(method) else { fatalError("BIO_new failed: out of memory") }
        BIO_set_data(bio, Unmanaged.passUnretained(session).toOpaque())
        return bio
    }

    /// The session, borrowed (no reference count per read or write).
    private static func session(of bio: OpaquePointer) -> Unmanaged<TLSSession> {
        Unmanaged<TLSSession>.fromOpaque(BIO_get_data(bio))
    }
}
