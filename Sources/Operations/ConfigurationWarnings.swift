/// What a configuration leaves open that an operator should hear about: said once at start
/// (`serve`, at warning) and by `config check`, each in one line naming what is open, to whom,
/// and the setting that closes it. Not errors: a trusted network may want them so.
public enum ConfigurationWarnings {
    public static func of(_ configuration: ServerConfiguration) -> [String] {
        var warnings = [String]()
        if configuration.adminToken == nil && !isLoopback(configuration.host) {
            let variable = Settings.setting("admin.token")?.environmentName ?? "SCROLLSYNC_ADMIN_TOKEN"
            let wildcard = ["0.0.0.0", "::", "[::]", ""].contains(configuration.host)
            let reach = wildcard ? "port \(configuration.port) on any address of this machine" : "\(configuration.host):\(configuration.port)"
            warnings.append("GET /rooms (every public room with its driver's and document's names) and GET /metrics are open to anyone "
                + "who can reach \(reach), with no admin.token: set admin.token (\(variable)) to close them")
        }
        if configuration.redisURL != nil && configuration.redisSecret == nil { warnings.append(unsignedRedis) }
        return warnings
    }

    /// Redis shared without `redis.secret`.
    static let unsignedRedis = "Redis is shared without redis.secret: any client of that Redis that may PUBLISH can change rooms "
        + "on every node (set redis.secret, the same on every node)"

    /// Whether `host` is reached only from this machine (127.0.0.0/8, ::1, localhost).
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return bare.lowercased() == "localhost" || bare.hasPrefix("127.") || bare == "::1" || bare.lowercased().hasPrefix("::ffff:127.")
    }
}
