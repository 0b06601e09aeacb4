import Access
import ScrollModel
import SyncServer

/// Comparing secrets and finding them in URLs (issue 44): every secret comparison goes through
/// `ConstantTime.equal`, every check for a secret in a URL through `QueryText`.
extension FuzzTarget {
    private static let tokenSecret = "fuzz-secret-0123456789abcdef0123456789"
    private static let base64URL = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The input split at its first byte into two secrets: equal exactly when their bytes are,
    /// in either order and as any collection; never equal to itself with 256·k zero bytes more.
    /// A signed token with base64url characters from the input added to its signature is
    /// refused (`A`s add zero bytes: 256 of them verified once). A secret parameter's name,
    /// spelled in any case and with any of its characters percent-encoded, is found in a URL.
    static func secretCompare(_ data: [UInt8]) throws(FuzzFinding) {
        guard let first = data.first else { return }
        let rest = data.dropFirst()
        let cut = rest.index(rest.startIndex, offsetBy: Int(first) % (rest.count + 1))
        let a = Array(rest[..<cut]), b = Array(rest[cut...])
        try expect(ConstantTime.equal(a, b) == (a == b) && ConstantTime.equal(b, a) == (a == b), "equal(\(a), \(b)) is wrong")
        try expect(ConstantTime.equal(a, rest[..<cut]) && ConstantTime.equal(b[...], b), "a secret differs from itself as another collection")
        let padded = a + [UInt8](repeating: 0, count: 256 * (1 + Int(first) % 3))
        try expect(!ConstantTime.equal(a, padded) && !ConstantTime.equal(padded, a), "\(a) equals itself with \(padded.count - a.count) zero bytes more")

        let verifier = TokenVerifier(secret: tokenSecret)
        let token = verifier.mint(TokenClaims(room: "r", role: .presenter), issuedAt: 0)
        let extra = String(decoding: b.map { base64URL[Int($0 & 63)] }, as: UTF8.self)
        if case .success = verifier.verify(token + extra, now: 0) {
            try expect(extra.isEmpty, "a token with \(extra.utf8.count) characters more on its signature verifies")
        }

        let secret = secretQueryParameters[Int(first) % secretQueryParameters.count]
        var spelled = ""
        for (index, character) in secret.utf8.enumerated() {
            let bits = index < b.count ? b[index] : 0
            let letter = bits & 1 == 0 ? String(Unicode.Scalar(character)) : String(Unicode.Scalar(character)).uppercased()
            spelled += bits & 2 == 0 ? letter : "%" + String(character, radix: 16, uppercase: bits & 4 != 0)
        }
        try expect(QueryText.secretName(spelled[...]) == secret, "\(spelled) is not found to name \(secret)")
        let url = "ws://h/rooms/r?role=follower&\(spelled)=v"
        try expect(QueryText.secretProblem(inURL: url) != nil, "\(url) passes as a URL without secrets")
        try expect(QueryText.secretProblem(inURL: "ws://h/rooms/r#" + String(decoding: a, as: UTF8.self)) != nil, "a fragment passes")
    }
}
