/// What the key records a room keeps look like, as the store and Redis hold them: a presenter
/// key's (`pbkdf2-sha256$ITERATIONS$SALT$HASH`, or the 64 hex digits of older servers) and a
/// follow key's (`sha256$SALT$HASH`), hex throughout. A room and what a node reads from another
/// (`SharedInput`) check records here; making records and matching keys against them is the
/// access layer's job (`PresenterKey`, `FollowKey`).
package enum KeyRecord {
    /// Kept in place of a record that could not be read (a damaged file, a bad Redis field): no
    /// key matches it, so the room stays locked to presenters, or private, instead of opening.
    package static let unreadable = "unreadable"
    package static let presenterScheme = "pbkdf2-sha256"
    package static let followScheme = "sha256"

    /// Whether `text` is a presenter key record a key can be checked against.
    package static func isPresenterKey(_ text: String) -> Bool {
        isLegacyPresenterKey(text) || presenterParameters(text).map { _ in text.split(separator: "$").last?.count == 64 } == true
    }

    /// A record of servers before slow hashing: 64 hex digits (SHA-256 salted with the room name).
    package static func isLegacyPresenterKey(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// A presenter key record's cost and salt, or nil when it is not a slow-hash record.
    package static func presenterParameters(_ record: String) -> (iterations: Int, salt: [UInt8])? {
        let parts = record.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == presenterScheme, let iterations = Int(parts[1]), (1_000...1_000_000).contains(iterations),
              parts[2].count == 32, let salt = Hex.bytes(hex: parts[2]) else { return nil }
        return (iterations, salt)
    }

    /// Whether `text` is a follow key record a key can be checked against.
    package static func isFollowKey(_ text: String) -> Bool {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        return parts.count == 3 && parts[0] == followScheme && followSalt(of: text) != nil && parts[2].utf8.count == 64
            && parts[2].utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// A follow key record's salt, or nil when it is not one.
    package static func followSalt(of record: String) -> [UInt8]? {
        let parts = record.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == followScheme, parts[1].utf8.count == 32 else { return nil }
        return Hex.bytes(hex: parts[1])
    }
}

/// Lowercase hex, as key records and store files write digests and salts.
package enum Hex {
    /// `bytes` as lowercase hex digits.
    package static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lowercase hex digits as bytes, or nil for anything else (odd length, other characters).
    package static func bytes(hex: Substring) -> [UInt8]? {
        var out = [UInt8]()
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let h = nibble(high), let l = nibble(low) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }

    /// One lowercase hex digit's value.
    package static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 97...102: byte - 87
        default: nil
        }
    }
}
