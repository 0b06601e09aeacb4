import COpenSSL
import Synchronization

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

    /// A session for one connection; its ciphertext goes through the loop's I/O once a
    /// channel takes it (`TLSSession.attach`), never through a descriptor of its own.
    /// - Parameter verifyHostName: the server's certificate must name `serverName`.
    func makeSession(isServer: Bool, serverName: String? = nil, verifyHostName: Bool = false) throws(TLSError) -> TLSSession {
        // Made under the lock: a reload cannot free the context between reading and using it.
        guard let ssl = current.withLock({ SSL_new($0.pointer) }) else { throw .failure("SSL_new") }
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
