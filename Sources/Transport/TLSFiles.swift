import COpenSSL

/// A server's certificate chain and key, read by us and handed to OpenSSL from memory: only
/// regular files are read (`readRegularFile`), so a FIFO, a directory or a device at either
/// path is refused with a reason instead of hanging a start or a reload, and each file is
/// read once, whole, then parsed (no second open of a name that may have changed).
extension TLSContext {
    /// Most bytes a certificate chain or key file may hold: a chain of ten certificates is
    /// under 20 KiB.
    static let pemFileLimit = 1 << 20

    /// `SSL_CTX_use_certificate_chain_file` from memory: the first certificate is the
    /// server's, those after it the chain; the end of the text ends the chain.
    static func useCertificateChain(_ context: OpaquePointer, file: String) throws(TLSError) {
        let bio = try memoryBIO(readPEM(file, "certificate chain"))
        defer { BIO_free(bio) }
        ERR_clear_error()
        guard let certificate = PEM_read_bio_X509_AUX(bio, nil, nil, nil) else { throw .failure("cannot load certificate chain \(file)") }
        defer { X509_free(certificate) }
        guard SSL_CTX_use_certificate(context, certificate) == 1, scrollsync_SSL_CTX_clear_chain_certs(context) == 1 else {
            throw .failure("cannot use certificate \(file)")
        }
        while let next = PEM_read_bio_X509(bio, nil, nil, nil) {
            guard scrollsync_SSL_CTX_add0_chain_cert(context, next) == 1 else {  // takes `next` only when it succeeds
                X509_free(next)
                throw .failure("cannot add a chain certificate of \(file)")
            }
        }
        // The loop ends at the end of the text ("no start line"); anything else is damage.
        let last = ERR_peek_last_error()
        guard last == 0 || (ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE) else {
            throw .failure("cannot load certificate chain \(file)")
        }
        ERR_clear_error()
    }

    /// `SSL_CTX_use_PrivateKey_file` (PEM) from memory. Our copy of the key's bytes is
    /// overwritten once OpenSSL has parsed it.
    static func usePrivateKey(_ context: OpaquePointer, file: String) throws(TLSError) {
        var bytes = try readPEM(file, "private key")
        defer { bytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let bio = try memoryBIO(bytes)
        defer { BIO_free(bio) }
        ERR_clear_error()
        guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw .failure("cannot load private key \(file)") }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(context, key) == 1 else { throw .failure("cannot use private key \(file)") }
    }

    private static func readPEM(_ file: String, _ what: String) throws(TLSError) -> [UInt8] {
        do {
            return try readRegularFile(file, atMost: pemFileLimit)
        } catch {
            throw .openSSL("cannot read \(what) \(file): \(error)")
        }
    }

    /// A memory BIO holding a copy of `bytes`.
    private static func memoryBIO(_ bytes: [UInt8]) throws(TLSError) -> OpaquePointer {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .failure("BIO_new") }
        guard bytes.isEmpty || BIO_write(bio, bytes, Int32(bytes.count)) == Int32(bytes.count) else {
            BIO_free(bio)
            throw .failure("BIO_write")
        }
        return bio
    }
}
