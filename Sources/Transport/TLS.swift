import COpenSSL
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TLS configuration (an `SSL_CTX`) built on the system OpenSSL. TLS 1.2 is the minimum.
public final class TLSContext: @unchecked Sendable {
    /// The OpenSSL context new sessions are made from; `reload` replaces it. Sessions made
    /// before keep the one they were made from (OpenSSL counts its references).
    private let current: Mutex<ContextPointer>
    /// An `SSL_CTX` pointer, passed between threads under `current`'s lock (OpenSSL's
    /// contexts are thread-safe for making sessions).
    private struct ContextPointer: @unchecked Sendable { let pointer: OpaquePointer }

    /// TLS 1.2 suites a server offers by default: ECDHE key exchange (forward secrecy) with
    /// an AEAD cipher (AES-GCM, ChaCha20-Poly1305) only; no RSA key exchange, no CBC. TLS 1.3
    /// suites are all of that kind already (OpenSSL's defaults are kept).
    public static let forwardSecretCiphers = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// A server context from PEM files: the certificate chain and its private key. A chain
    /// that cannot be read, a path that is not a regular file (a FIFO, a directory, a
    /// device), a key that does not match it, or a certificate past its end date is refused.
    /// - Parameter ciphers: the TLS 1.2 cipher list (OpenSSL's syntax); the server's
    ///   order wins over the client's. Renegotiation is off.
    public init(certificateChainFile: String, privateKeyFile: String, ciphers: String = TLSContext.forwardSecretCiphers) throws(TLSError) {
        current = Mutex(ContextPointer(pointer: try Self.serverContext(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile, ciphers: ciphers)))
    }

    /// Serves new handshakes with another certificate and key (a renewed certificate), or
    /// throws and keeps the one it has. Connections already open keep theirs.
    public func reload(certificateChainFile: String, privateKeyFile: String, ciphers: String = TLSContext.forwardSecretCiphers) throws(TLSError) {
        let fresh = ContextPointer(pointer: try Self.serverContext(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile, ciphers: ciphers))
        let old = current.withLock { context in
            defer { context = fresh }
            return context
        }
        SSL_CTX_free(old.pointer)
    }

    private static func serverContext(certificateChainFile: String, privateKeyFile: String, ciphers: String) throws(TLSError) -> OpaquePointer {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw .failure("SSL_CTX_new") }
        do {
            try configure(context)
            guard SSL_CTX_set_cipher_list(context, ciphers) == 1 else { throw TLSError.failure("no usable cipher in tls.ciphers \(ciphers)") }
            _ = scrollsync_SSL_CTX_set_options(context, scrollsync_SSL_OP_CIPHER_SERVER_PREFERENCE() | scrollsync_SSL_OP_NO_RENEGOTIATION())
            try useCertificateChain(context, file: certificateChainFile)
            try usePrivateKey(context, file: privateKeyFile)
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw TLSError.failure("private key \(privateKeyFile) does not match the certificate")
            }
            if let certificate = SSL_CTX_get0_certificate(context), X509_cmp_current_time(X509_get0_notAfter(certificate)) < 0 {
                throw TLSError.failure("certificate \(certificateChainFile) has expired")
            }
            return context
        } catch {
            SSL_CTX_free(context)
            throw error as! TLSError
        }
    }

    /// A client context. With `verify`, the peer must present a certificate that chains
    /// to the system roots or to `caFile`.
    public init(clientVerifying verify: Bool, caFile: String? = nil) throws(TLSError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw .failure("SSL_CTX_new") }
        current = Mutex(ContextPointer(pointer: context))  // freed by deinit if what follows fails
        try Self.configure(context)
        if verify {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if let caFile {
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else { throw .failure("cannot load CA file \(caFile)") }
            } else {
                SSL_CTX_set_default_verify_paths(context)
            }
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
    }

    private static func configure(_ context: OpaquePointer) throws(TLSError) {
        guard scrollsync_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw .failure("cannot require TLS 1.2")
        }
        // Partial writes and moving buffers suit a write queue; released buffers keep an
        // idle TLS connection small.
        _ = scrollsync_SSL_CTX_set_mode(
            context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
    }

    deinit { current.withLock { SSL_CTX_free($0.pointer) } }

    /// - Parameter verifyHostName: the server's certificate must name `serverName`.
    func makeSession(fd: Int32, isServer: Bool, serverName: String? = nil, verifyHostName: Bool = false) throws(TLSError) -> TLSSession {
        // Made under the lock: a reload cannot free the context between reading and using it.
        guard let ssl = current.withLock({ SSL_new($0.pointer) }) else { throw .failure("SSL_new") }
        SSL_set_fd(ssl, fd)
        if isServer {
            SSL_set_accept_state(ssl)
        } else {
            if let serverName { _ = scrollsync_SSL_set_tlsext_host_name(ssl, serverName) }
            if verifyHostName, let serverName { _ = SSL_set1_host(ssl, serverName) }
            SSL_set_connect_state(ssl)
        }
        return TLSSession(ssl: ssl)
    }
}

/// A TLS failure, with OpenSSL's own words.
public enum TLSError: Error, CustomStringConvertible, Sendable {
    case openSSL(String)

    static func failure(_ what: String) -> TLSError {
        .openSSL("\(what): \(TLSSession.drainErrors())")
    }

    public var description: String {
        switch self { case .openSSL(let message): message }
    }
}

/// Why a TLS connection failed, as a person needs to hear it.
public enum TLSFailure: Sendable, Equatable, CustomStringConvertible {
    /// The peer's certificate did not verify (OpenSSL's reason: self-signed, expired,
    /// hostname mismatch…). Retrying cannot help.
    case untrusted(String)
    /// The peer does not speak TLS (it answered in plain text). Retrying cannot help.
    case notTLS
    case other(String)

    public var description: String {
        switch self {
        case .untrusted(let why): "the server's certificate is not trusted: \(why)"
        case .notTLS: "not a TLS server (it answered in plain text; use ws:// for it)"
        case .other(let why): "TLS failed: \(why)"
        }
    }

    /// Whether trying again cannot succeed.
    public var isPermanent: Bool { if case .other = self { false } else { true } }
}

/// One TLS connection over a non-blocking socket. WANT_READ / WANT_WRITE are reported,
/// never waited for: the event loop retries when the socket is ready.
final class TLSSession {
    enum Outcome {
        case bytes(Int)
        case wantRead
        case wantWrite
        /// The peer sent close_notify or closed the socket.
        case closed
        case failed(TLSFailure)
    }

    private let ssl: OpaquePointer

    init(ssl: OpaquePointer) { self.ssl = ssl }

    deinit { SSL_free(ssl) }

    /// Bytes already decrypted and waiting in OpenSSL (the socket may not be readable).
    var pending: Int { Int(SSL_pending(ssl)) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        return result > 0 ? .bytes(Int(result)) : outcome(result)
    }

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

    /// Sends close_notify (one attempt; the socket is shut down right after).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
    }

    private func outcome(_ result: Int32) -> Outcome {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let error = errno
            if error == EAGAIN || error == EWOULDBLOCK { return .wantRead }
            return result == 0 || error == 0 || error == ECONNRESET || error == EPIPE ? .closed : .failed(.other(String(cString: strerror(error))))
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
