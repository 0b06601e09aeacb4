import COpenSSL

/// How a private room keeps its follow key: a salted SHA-256 record,
/// `sha256$SALT$HASH` (hex), never the key. Fast on purpose: every follower's join checks it
/// (a storm of 10,000 followers costs 10,000 hashes of a few hundred nanoseconds, not 10,000
/// PBKDF2 runs), so a follow key must be long and random to resist guessing from a leaked
/// record (`scrollsync` suggests one; wrong keys count against `limits.keyFailuresPerMinute`).
public enum FollowKey {
    static let scheme = "sha256"
    /// Kept when a record could not be read (a damaged file, a bad Redis field): no key
    /// matches it, so the room stays private to everyone but its presenters.
    public static let unreadable = "unreadable"

    /// The record of `key` with the salt of `existing` (to compare with it), or with a
    /// fresh salt when there is none (to keep it).
    public static func record(_ key: String, matching existing: String?) -> String {
        var salt: [UInt8]
        if let existing, let parsed = self.salt(of: existing) {
            salt = parsed
        } else {
            salt = [UInt8](repeating: 0, count: 16)
            if RAND_bytes(&salt, 16) != 1 { for index in salt.indices { salt[index] = UInt8.random(in: 0...255) } }
        }
        return "\(scheme)$\(StoreFile.hex(salt))$\(StoreFile.sha256(salt + Array(key.utf8)))"
    }

    /// Whether `text` is a record a key can be checked against.
    public static func isValid(_ text: String) -> Bool {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        return parts.count == 3 && parts[0] == scheme && salt(of: text) != nil && parts[2].utf8.count == 64
            && parts[2].utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    private static func salt(of record: String) -> [UInt8]? {
        let parts = record.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == scheme, parts[1].utf8.count == 32 else { return nil }
        var salt = [UInt8]()
        var iterator = parts[1].utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = nibble(high), let l = nibble(low) else { return nil }
            salt.append(h << 4 | l)
        }
        return salt
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 97...102: byte - 87
        default: nil
        }
    }
}
