import Access
import COpenSSL
import RoomKit
import ScrollModel

/// Signs what a node publishes on a room's channel and checks what it reads there
/// (`redis.secret`, HMAC-SHA256 through libcrypto): a client of the shared Redis that may
/// publish, but does not know the secret, cannot speak for the nodes.
///
/// - A message the node publishes itself (`S`, `P`, `Q`) goes out as `!TAG MESSAGE`: TAG is the
///   HMAC of the channel and the message, 64 hex digits.
/// - A change a script orders gets its version (and a state its `seq`) inside Redis, after the
///   node sent it. The node sends the script the change's key (`key(channel:message:)`: the
///   HMAC of the channel and the message without its `seq`), and the script publishes
///   `!TAG VERSION MESSAGE`, TAG the SHA-1 of the key, the version and the `seq`
///   (`redis.sha1hex`, 40 hex digits). Only nodes and the script see the key, never the
///   channel: to sign another version or another message one needs the secret.
///
/// Without a secret nothing is signed and `Scripts` skip the SHA-1 (an empty key).
package struct ChannelSigner: Sendable {
    private let secret: [UInt8]

    package init(secret: String) { self.secret = Array(secret.utf8) }

    /// `!TAG ` for a message the node publishes itself on `channel`.
    package func tag(channel: String, message: some Collection<UInt8>) -> [UInt8] {
        [UInt8(ascii: "!")] + Self.hex(mac("d ", channel, message)) + [UInt8(ascii: " ")]
    }

    /// The key a script signs a change with (see the type): `message` as the node sends it,
    /// a state's without the `seq` the script writes after `statePrefix`.
    package func key(channel: String, message: some Collection<UInt8>) -> String {
        String(decoding: Self.hex(mac("v ", channel, message)), as: UTF8.self)
    }

    /// The message after a valid tag, or why it is refused.
    package func verify(channel: String, payload: [UInt8]) -> Result<ArraySlice<UInt8>, SharedInput.Refusal> {
        guard payload.first == UInt8(ascii: "!"), let space = payload.firstIndex(of: UInt8(ascii: " ")) else {
            return .failure(SharedInput.Refusal(reason: .unsigned, detail: "not signed (redis.secret is set)"))
        }
        let given = payload[1..<space], message = payload[(space + 1)...]
        let head = message.prefix { $0 != UInt8(ascii: " ") }
        let expected: [UInt8]
        if !head.isEmpty, head.allSatisfy({ (48...57).contains($0) }), head.count <= 16 {
            // `VERSION MESSAGE`, signed by the script: the state's seq is not in the key.
            let body = message.dropFirst(head.count + 1)
            var seq = ArraySlice<UInt8>()
            var fixed = body
            if body.starts(with: statePrefix) {
                let digits = body.dropFirst(statePrefix.count).prefix { (48...57).contains($0) }
                seq = digits
                fixed = body[..<digits.startIndex] + body[digits.endIndex...]
            }
            let key = Self.hex(mac("v ", channel, fixed))
            expected = Self.hex(Self.sha1(key + [32] + head + [32] + seq))
        } else {
            expected = Self.hex(mac("d ", channel, message))
        }
        guard ConstantTime.equal(given, expected) else {
            return .failure(SharedInput.Refusal(reason: .unsigned, detail: "its signature does not match (another redis.secret, or forged)"))
        }
        return .success(message)
    }

    /// HMAC-SHA256 of `domain`, the channel, a newline and `message`.
    private func mac(_ domain: String, _ channel: String, _ message: some Collection<UInt8>) -> [UInt8] {
        var data = [UInt8]()
        data.reserveCapacity(domain.utf8.count + channel.utf8.count + 1 + message.count)
        data += domain.utf8
        data += channel.utf8
        data.append(10)
        data += message
        return Digest.hmacSHA256(key: secret, data)
    }

    private static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        bytes.withUnsafeBytes { raw in
            digest.withUnsafeMutableBufferPointer { scrollsync_sha1(raw.baseAddress, raw.count, $0.baseAddress) }
        }
        return digest
    }

    private static let digits = Array("0123456789abcdef".utf8)

    package static func hex(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return out
    }
}
