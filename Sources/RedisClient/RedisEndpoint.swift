/// Where a Redis server is: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, or `rediss://…` for
/// TLS. With a user the connection logs in as that ACL user; without one, as `default`.
public struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var database: Int
    /// The ACL user (Redis 6 and later); nil logs in as `default`.
    public var user: String?
    public var password: String?
    /// Connect over TLS (`rediss://`); the server's certificate must chain to the system's
    /// roots (or `caFile`) and name `host`.
    public var tls: Bool
    /// CA certificates (PEM) for a TLS server with a private CA.
    public var caFile: String?

    public init(host: String = "127.0.0.1", port: Int = 6379, database: Int = 0, user: String? = nil, password: String? = nil,
                tls: Bool = false, caFile: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.user = user
        self.password = password
        self.tls = tls
        self.caFile = caFile
    }

    /// Parses a `redis://` URL; the error says what is wrong with it.
    public init(url: String) throws(RedisError) {
        let secure = url.hasPrefix("rediss://")
        guard secure || url.hasPrefix("redis://") else {
            throw RedisError("a Redis URL starts with redis:// (or rediss:// for TLS), not \(url.prefix(16))")
        }
        var rest = Substring(url.dropFirst(secure ? "rediss://".count : "redis://".count))
        var endpoint = RedisEndpoint(tls: secure)
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let password = parts.last.map(String.init) ?? ""
            endpoint.password = password.isEmpty ? nil : password
            if parts.count == 2, !parts[0].isEmpty {
                guard endpoint.password != nil else { throw RedisError("a Redis URL with a user needs its password: redis://USER:PASSWORD@HOST") }
                endpoint.user = String(parts[0])
            }
        }
        if let slash = rest.firstIndex(of: "/") {
            let db = rest[rest.index(after: slash)...]
            guard db.isEmpty || Int(db).map({ (0...1023).contains($0) }) == true else {
                throw RedisError("the database in a Redis URL is a number (0-1023), not \(db.prefix(16))")
            }
            endpoint.database = Int(db) ?? 0
            rest = rest[..<slash]
        }
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else {
                throw RedisError("the port in a Redis URL is 1-65535, not \(rest[rest.index(after: colon)...].prefix(16))")
            }
            endpoint.port = port
            rest = rest[..<colon]
        }
        let host = rest.hasPrefix("[") && rest.hasSuffix("]") ? rest.dropFirst().dropLast() : rest
        guard !host.isEmpty else { throw RedisError("a Redis URL needs a host: redis://HOST:PORT") }
        endpoint.host = String(host)
        self = endpoint
    }

    /// The URL without the password.
    public var description: String {
        "\(tls ? "rediss" : "redis")://\(password == nil ? "" : "\(user ?? ""):***@")\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
    }
}

/// A Redis failure, said in words.
public struct RedisError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A reply from Redis.
public enum RedisReply: Sendable, Equatable {
    case string([UInt8])
    case integer(Int)
    case array([RedisReply])
    case null
    case status(String)
    /// An error reply, or the connection failed before the reply came.
    case error(String)

    public var text: String? {
        switch self {
        case .string(let bytes): String(decoding: bytes, as: UTF8.self)
        case .status(let text): text
        case .integer(let value): String(value)
        default: nil
        }
    }

    public var integer: Int? {
        switch self {
        case .integer(let value): value
        case .string(let bytes): Int(String(decoding: bytes, as: UTF8.self))
        default: nil
        }
    }

    public var elements: [RedisReply] {
        if case .array(let elements) = self { elements } else { [] }
    }

    public var isError: Bool { if case .error = self { true } else { false } }
}
