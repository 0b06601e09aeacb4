import COpenSSL
import RoomKit
import ScrollModel

/// How a private room keeps its follow key: a salted SHA-256 record,
/// `sha256$SALT$HASH` (hex), never the key. Fast on purpose: every follower's join checks it
/// (a storm of 10,000 followers costs 10,000 hashes of a few hundred nanoseconds, not 10,000
/// PBKDF2 runs), so a follow key must be long and random to resist guessing from a leaked
/// record (`scrollsync` suggests one; wrong keys count against `limits.keyFailuresPerMinute`).
public enum FollowKey {
    package static let scheme = KeyRecord.followScheme
    /// Kept when a record could not be read (a damaged file, a bad Redis field): no key
    /// matches it, so the room stays private to everyone but its presenters.
    public static let unreadable = KeyRecord.unreadable

    /// A record no key matches (random salt and hash), checked in place of a room that is not
    /// there, so that a missing room and a private one answer alike and take as long.
    package static let decoy = "\(scheme)$\(Hex.encode(randomBytes(16)))$\(Hex.encode(randomBytes(32)))"

    package static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        if RAND_bytes(&bytes, Int32(count)) != 1 { for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) } }
        return bytes
    }

    /// The record of `key` with the salt of `existing` (to compare with it), or with a
    /// fresh salt when there is none (to keep it).
    public static func record(_ key: String, matching existing: String?) -> String {
        var salt: [UInt8]
        if let existing, let parsed = KeyRecord.followSalt(of: existing) {
            salt = parsed
        } else {
            salt = [UInt8](repeating: 0, count: 16)
            if RAND_bytes(&salt, 16) != 1 { for index in salt.indices { salt[index] = UInt8.random(in: 0...255) } }
        }
        return "\(scheme)$\(Hex.encode(salt))$\(Digest.sha256(salt + Array(key.utf8)))"
    }

    /// Whether `key` is the one `record` was made from: one SHA-256 of a short input and a
    /// constant-time comparison, without splitting or decoding the record into new strings
    /// (every follower's join of a private room does this, twice: before the upgrade and
    /// in the room).
    public static func matches(_ key: String, record: String) -> Bool {
        let text = record.utf8
        // sha256$ + 32 hex salt + $ + 64 hex hash
        guard text.count == 7 + 32 + 1 + 64, text.starts(with: "sha256$".utf8) else { return false }
        var input = [UInt8]()
        input.reserveCapacity(16 + key.utf8.count)
        var index = text.index(text.startIndex, offsetBy: 7)
        for _ in 0..<16 {
            guard let high = Hex.nibble(text[index]), let low = Hex.nibble(text[text.index(after: index)]) else { return false }
            input.append(high << 4 | low)
            index = text.index(index, offsetBy: 2)
        }
        guard text[index] == UInt8(ascii: "$") else { return false }
        index = text.index(after: index)
        input.append(contentsOf: key.utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        input.withUnsafeBufferPointer { _ = SHA256($0.baseAddress, $0.count, &digest) }
        let hexDigits: StaticString = "0123456789abcdef"
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { hex in
            for (position, byte) in digest.enumerated() {
                hex[2 * position] = hexDigits.utf8Start[Int(byte >> 4)]
                hex[2 * position + 1] = hexDigits.utf8Start[Int(byte & 15)]
            }
            return ConstantTime.equal(hex, text[index...])
        }
    }

    /// Whether `text` is a record a key can be checked against.
    public static func isValid(_ text: String) -> Bool { KeyRecord.isFollowKey(text) }
}
