import COpenSSL
import RoomKit
import ScrollModel
import Synchronization
import Transport

/// How a room keeps its presenter key: never the key, a slow salted hash of it (PBKDF2-HMAC-
/// SHA256 through libssl, a random 16-byte salt per room), as text that the store and Redis
/// keep as it is: `pbkdf2-sha256$ITERATIONS$SALT$HASH` (hex). A leaked record costs an
/// attacker 80,000 HMACs per guess. Records of older servers (64 hex digits: one SHA-256 of
/// the key salted with the room name) still verify, and are replaced at the next good join.
public enum PresenterKey {
    /// About 14 ms on the reference machine: a presenter's join stays under 20 ms, and the
    /// hashing runs on `KeyHasher`'s thread, never on an event loop.
    package static let iterations = 80_000
    package static let scheme = KeyRecord.presenterScheme
    /// Kept in place of a record that could not be read (from Redis): no key matches it, so
    /// the room stays locked to presenters instead of becoming keyless.
    public static let unreadable = KeyRecord.unreadable

    /// A record no key matches (a random salt and hash, made without hashing anything), checked
    /// in place of a room that is not there or has no key: a missing room and a private one
    /// answer alike, after a slow hash each.
    package static let decoy = "\(scheme)$\(iterations)$\(Hex.encode(FollowKey.randomBytes(16)))$\(Hex.encode(FollowKey.randomBytes(32)))"

    /// The record of `key` made with the record `existing`'s salt and cost (to compare with
    /// it), or with a fresh salt when there is none (to bind the key).
    package static func record(_ key: String, matching existing: String?, room: String) -> String {
        if let existing, isLegacy(existing) { return legacyDigest(key, room: room) }
        if let existing, let (iterations, salt) = parameters(existing) { return derive(key, salt: salt, iterations: iterations) }
        var salt = [UInt8](repeating: 0, count: 16)
        if RAND_bytes(&salt, 16) != 1 { for index in salt.indices { salt[index] = UInt8.random(in: 0...255) } }
        return derive(key, salt: salt, iterations: iterations)
    }

    /// Whether `text` is a record this server can check a key against.
    public static func isValid(_ text: String) -> Bool { KeyRecord.isPresenterKey(text) }

    package static func isLegacy(_ text: String) -> Bool { KeyRecord.isLegacyPresenterKey(text) }

    /// The records of servers before slow hashing: SHA-256 salted with the room name.
    package static func legacyDigest(_ key: String, room: String) -> String {
        Digest.sha256(Array("scrollsync.v1 presenter key\u{0}\(room)\u{0}\(key)".utf8))
    }

    private static func parameters(_ record: String) -> (iterations: Int, salt: [UInt8])? { KeyRecord.presenterParameters(record) }

    private static func derive(_ key: String, salt: [UInt8], iterations: Int) -> String {
        var hash = [UInt8](repeating: 0, count: 32)
        let password = Array(key.utf8)
        _ = password.withUnsafeBufferPointer { passwordBytes in
            passwordBytes.withMemoryRebound(to: CChar.self) {
                PKCS5_PBKDF2_HMAC($0.baseAddress, Int32($0.count), salt, Int32(salt.count), Int32(iterations), EVP_sha256(), 32, &hash)
            }
        }
        return "\(scheme)$\(iterations)$\(Hex.encode(salt))$\(Hex.encode(hash))"
    }

}

/// Hashes presenter keys on a thread of its own (a `FairWorker`: in turns between addresses,
/// bounded), so that an event loop never spends the milliseconds a slow hash takes, and no
/// other slow work (a recording's page has a worker of its own) delays a join's check. A key
/// already verified against a record is recognised again by a cheap digest (SHA-256 with a
/// random secret of this process, kept in memory only), so a presenter who reconnects costs
/// no slow hash. At most `capacity` hashes wait, `perAddress` from one address; beyond that
/// `hash` answers false at once.
package final class KeyHasher: Sendable {
    /// The thread the hashes run on (tests fill it).
    package let worker: FairWorker
    /// Record → digest of the key that matched it.
    private let verified = Mutex([String: String]())
    private let secret: [UInt8]
    /// Slow hashes computed (tests: a verified key costs none).
    package let slowHashes = Atomic<Int>(0)
    /// Verified records remembered (a record and a digest: about 200 bytes each).
    package static let verifiedCapacity = 10_000
    /// Verified records held now (tests).
    package var verifiedCount: Int { verified.withLock { $0.count } }

    /// 4,096 checks waiting at about 14 ms each are about a minute of one core: past that a
    /// join is better told at once to come back; 64 from one address, so that one address cannot
    /// take every place.
    package init(capacity: Int = 4096, perAddress: Int = 64) {
        worker = FairWorker(capacity: capacity, perAddress: perAddress)
        var secret = [UInt8](repeating: 0, count: 32)
        if RAND_bytes(&secret, 32) != 1 { for index in secret.indices { secret[index] = UInt8.random(in: 0...255) } }
        self.secret = secret
    }

    /// Runs `record(key, existing, room)` on the hasher's thread (or answers from the verified
    /// keys), then `done` with it on `loop`; false when too many jobs wait.
    package func hash(_ key: String, matching existing: String?, room: String, from address: String, on loop: EventLoop,
              done: @escaping @Sendable (String) -> Void) -> Bool {
        if let existing {
            let digest = quickDigest(key, existing)
            if let known = verified.withLock({ $0[existing] }) {
                // Verified before: the same key matches; any other key cannot.
                let record = ConstantTime.equal(known.utf8, digest.utf8) ? existing : ""
                loop.execute { done(record) }
                return true
            }
        }
        return worker.perform(from: address) { [self] in
            let record = PresenterKey.record(key, matching: existing, room: room)
            slowHashes.add(1, ordering: .relaxed)
            if let existing, ConstantTime.equal(record.utf8, existing.utf8) { remember(existing, quickDigest(key, existing)) }
            loop.execute { done(record) }
        }
    }

    private func quickDigest(_ key: String, _ record: String) -> String {
        Digest.sha256(secret + Array(record.utf8) + [0] + Array(key.utf8))
    }

    /// Keeps `record`'s verified digest (internal for tests: at most `verifiedCapacity`).
    package func remember(_ record: String, _ digest: String) {
        verified.withLock { verified in
            if verified.count >= Self.verifiedCapacity { verified.removeAll(keepingCapacity: true) }
            verified[record] = digest
        }
    }
}
