import Access
import ArgumentParser
import Operations
import ScrollModel
import SyncServer
#if canImport(Glibc)
import Glibc
#endif

/// `scrollsync token ROOM`: mints a room token with the server's `auth.secret`, as an
/// application that hosts rooms would (PROTOCOL.md §2.1).
struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a signed token that admits its holder to a room (auth.secret of the configuration).",
        discussion: """
        The secret comes from the configuration as `serve` reads it (--config or SCROLLSYNC_CONFIG, \
        SCROLLSYNC_AUTH_SECRET). Give the token as ?token=… or Authorization: Bearer, or with \
        follow/present --token. A room ending in * covers every room with that prefix.
        """)

    @Argument(help: "The room, or a prefix followed by * (e.g. team-*).")
    var room: String

    @Option(help: "presenter (may also follow) or follower.")
    var role: String = "follower"

    @Option(help: "How long it is valid: seconds, or with s, m, h or d (e.g. 90m, 2h).")
    var ttl: String = "2h"

    @Option(help: "The display name it gives its holder.")
    var name: String?

    @Option(help: "Configuration file (JSON).")
    var config: String?

    func validate() throws {
        guard Role(rawValue: role) != nil else { throw ValidationError("--role must be presenter or follower, not \(role)") }
        guard Self.seconds(ttl) != nil else { throw ValidationError("--ttl must be a duration like 3600, 90m, 2h or 7d, not \(ttl)") }
        guard TokenVerifier.isRoomPattern(room) else { throw ValidationError("not a room name or prefix*: \(room)") }
        if let name, !DisplayName.isValid(name) { throw ValidationError("--name: at most 64 characters") }
    }

    func run() throws {
        let configuration: ServerConfiguration
        do {
            configuration = try loadConfiguration(file: config, flags: [])
        } catch {
            logError("configuration: \(error)")
            throw ExitCode(78)
        }
        guard let secret = configuration.authSecret else {
            logError("configuration: auth.secret is not set (SCROLLSYNC_AUTH_SECRET or \"auth\": {\"secret\": …}); a server without it accepts no tokens")
            throw ExitCode(78)
        }
        let now = Int(time(nil))
        let claims = TokenClaims(room: room, role: Role(rawValue: role)!, name: name, expires: now + Self.seconds(ttl)!)
        print(TokenVerifier(secret: secret).mint(claims, issuedAt: now))
    }

    /// `3600`, `90m`, `2h`, `7d` as seconds (1 s to 366 d).
    static func seconds(_ text: String) -> Int? {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        let unit = text.last.flatMap { units[$0] }
        guard let value = Int(unit == nil ? text : String(text.dropLast())), value > 0 else { return nil }
        let total = value * (unit ?? 1)
        return total <= 366 * 86_400 ? total : nil
    }
}
