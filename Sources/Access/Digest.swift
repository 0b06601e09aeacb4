import COpenSSL
import RoomKit

/// SHA-256 as key records and store files write it.
package enum Digest {
    /// The SHA-256 of `bytes`, as 64 lowercase hex digits.
    package static func sha256(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBufferPointer { _ = SHA256($0.baseAddress, $0.count, &digest) }
        return Hex.encode(digest)
    }
}
