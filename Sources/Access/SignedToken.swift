import COpenSSL
import RoomKit
import ScrollModel

/// What an application's signed token grants (the way Centrifugo lets an app authorise its
/// users): a room, or every room whose name starts with a prefix (`"team-*"`), in a role, under
/// a display name, for a while. Protocol/PROTOCOL.md §2.1 documents the claims.
public struct TokenClaims: Sendable, Equatable {
    /// A room name, or a prefix followed by `*`.
    public var room: String
    /// `presenter` may present or follow; `follower` may only follow.
    public var role: Role
    public var name: String?
    /// Seconds since 1970 (`exp`, `nbf`), if given.
    public var expires: Int?
    public var notBefore: Int?

    public init(room: String, role: Role, name: String? = nil, expires: Int? = nil, notBefore: Int? = nil) {
        self.room = room
        self.role = role
        self.name = name
        self.expires = expires
        self.notBefore = notBefore
    }

    /// Whether the token names `room` (exactly, or by its prefix).
    public func covers(room name: String) -> Bool {
        room.hasSuffix("*") ? name.hasPrefix(room.dropLast()) : name == room
    }

    /// Whether it lets its holder join in `role`.
    public func allows(_ asked: Role) -> Bool { role == .presenter || asked == .follower }
}

/// Why a token was refused: HTTP 401 (not a valid token) or 403 (valid, but not for this).
public struct TokenError: Error, Equatable, Sendable {
    public let status: Int
    public let message: String
}

/// Compact JWTs (RFC 7519) signed with HMAC-SHA256 (RFC 7518 §3.2) through libssl, and only
/// that: a token whose header names another algorithm (`none`, RS256, HS512) is refused
/// before its signature is looked at, and `exp`/`nbf` hold with a leeway of 30 s for clocks
/// that disagree a little.
public struct TokenVerifier: Sendable {
    private let secret: [UInt8]
    public static let leewaySeconds = 30
    /// Longer tokens are refused unread.
    public static let maxLength = 4096

    public init(secret: String) { self.secret = Array(secret.utf8) }

    /// The claims of `token` at `now` (seconds since 1970), or why it is refused.
    public func verify(_ token: String, now: Int) -> Result<TokenClaims, TokenError> {
        func invalid(_ why: String) -> Result<TokenClaims, TokenError> { .failure(TokenError(status: 401, message: "invalid token: \(why)")) }
        guard token.utf8.count <= Self.maxLength else { return invalid("longer than \(Self.maxLength) bytes") }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]) else { return invalid("not a compact JWT (three base64url parts)") }
        guard let header = try? headerBytes.withUnsafeBytes({ try JSON.parse($0) }), case .object = header else { return invalid("its header is not a JSON object") }
        guard header["alg"]?.string == "HS256" else { return invalid("only alg HS256 is accepted, not \(header["alg"]?.string.map { String($0.prefix(20)) } ?? "none")") }
        guard header["typ"].map({ $0.string == "JWT" }) ?? true, header["crit"] == nil else { return invalid("unsupported header (typ or crit)") }
        let signed = Array(token.utf8.prefix(parts[0].count + 1 + parts[1].count))
        guard ConstantTime.equal(Digest.hmacSHA256(key: secret, signed), signature) else { return invalid("bad signature") }
        guard let payload = try? payloadBytes.withUnsafeBytes({ try JSON.parse($0) }), case .object = payload else { return invalid("its claims are not a JSON object") }
        guard let room = payload["room"]?.string, Self.isRoomPattern(room) else { return invalid("\"room\" must be a room name or a prefix ending in *") }
        guard let role = payload["role"]?.string.flatMap(Role.init(rawValue:)) else { return invalid("\"role\" must be presenter or follower") }
        var claims = TokenClaims(room: room, role: role)
        if let name = payload["name"], !name.isNull {
            guard let text = name.string, DisplayName.isValid(text) else { return invalid("\"name\" must be a string of at most \(DisplayName.maxCharacters) characters") }
            claims.name = text
        }
        for (key, path) in [("exp", \TokenClaims.expires), ("nbf", \TokenClaims.notBefore)] {
            guard let value = payload[key], !value.isNull else { continue }
            guard let seconds = value.double, seconds.isFinite, seconds >= 0, seconds < 1e12 else { return invalid("\"\(key)\" must be seconds since 1970") }
            claims[keyPath: path] = Int(seconds)
        }
        if let expires = claims.expires, now > expires + Self.leewaySeconds { return invalid("expired \(now - expires) s ago") }
        if let notBefore = claims.notBefore, now + Self.leewaySeconds < notBefore { return invalid("not valid for another \(notBefore - now) s") }
        return .success(claims)
    }

    /// A token with `claims` (what `scrollsync token` prints).
    public func mint(_ claims: TokenClaims, issuedAt: Int) -> String {
        var header = JSONWriter()
        header.beginObject()
        header.field("alg", "HS256")
        header.field("typ", "JWT")
        header.endObject()
        var payload = JSONWriter()
        payload.beginObject()
        payload.field("room", claims.room)
        payload.field("role", claims.role.rawValue)
        if let name = claims.name { payload.field("name", name) }
        payload.field("iat", issuedAt)
        if let notBefore = claims.notBefore { payload.field("nbf", notBefore) }
        if let expires = claims.expires { payload.field("exp", expires) }
        payload.endObject()
        let signed = Base64URL.encode(header.bytes) + "." + Base64URL.encode(payload.bytes)
        return signed + "." + Base64URL.encode(Digest.hmacSHA256(key: secret, Array(signed.utf8)))
    }

    /// A room name, or a prefix of one followed by `*`.
    public static func isRoomPattern(_ text: String) -> Bool {
        if text.hasSuffix("*") { return text == "*" || RoomCore.isValidName(String(text.dropLast())) }
        return RoomCore.isValidName(text)
    }
}

/// base64url without padding (RFC 4648 §5, as JWTs use it).
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let n = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0...chunk.count { out.append(alphabet[Int(n >> (18 - 6 * UInt32(position)) & 63)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded base64url; nil for anything else (padding, other characters, a
    /// length no encoding has, stray bits).
    package static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        var buffer: UInt32 = 0
        var bits = 0
        for character in text {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
