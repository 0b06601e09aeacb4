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

    /// HMAC-SHA256 of `data` under `key` (32 bytes).
    package static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        _ = key.withUnsafeBufferPointer { keyBytes in
            data.withUnsafeBufferPointer { dataBytes in
                HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count), dataBytes.baseAddress, dataBytes.count, &out, &length)
            }
        }
        return out
    }
}
