import COpenSSL

/// SHA-1 (FIPS 180-4) from the system's libcrypto, only for `Sec-WebSocket-Accept`
/// (RFC 6455 §4.2.2): with the CPU's SHA instructions it costs a third of a portable
/// implementation, on every handshake. Not for anything that needs collision resistance.
enum SHA1 {
    static let digestSize = 20

    static func hash(_ message: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: digestSize) { digest, count in
            message.withUnsafeBytes { hash($0, into: UnsafeMutableRawBufferPointer(digest)) }
            count = digestSize
        }
    }

    /// Writes the 20-byte digest of `message` into `digest`, allocating nothing.
    static func hash(_ message: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer) {
        precondition(digest.count >= digestSize)
        scrollsync_sha1(message.baseAddress, message.count, digest.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }
}
