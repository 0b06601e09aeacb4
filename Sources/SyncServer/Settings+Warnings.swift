extension Settings {
    /// What a valid configuration leaves open, one line each: `config check` prints them and
    /// `serve` logs them at start.
    public static func warnings(_ configuration: ServerConfiguration) -> [String] {
        var warnings = [String]()
        if configuration.redisURL != nil && configuration.redisSecret == nil { warnings.append(unsignedRedisWarning) }
        return warnings
    }

    /// Redis shared without `redis.secret`.
    static let unsignedRedisWarning = "Redis is shared without redis.secret: any client of that Redis that may PUBLISH can change rooms "
        + "on every node (set redis.secret, the same on every node)"
}
