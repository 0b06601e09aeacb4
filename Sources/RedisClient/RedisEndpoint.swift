/// Where a Redis server is: `redis://[:PASSWORD@]HOST[:PORT][/DB]`.
public struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var database: Int
    public var password: String?

    public init(host: String = "127.0.0.1", port: Int = 6379, database: Int = 0, password: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.password = password
    }

    /// Parses a `redis://` URL; the error says what is wrong with it.
    public init(url: String) throws(RedisError) {
        guard url.hasPrefix("redis://") else {
            throw RedisError(url.hasPrefix("rediss://")
                ? "rediss:// (TLS) needs hiredis 1.0 or later; Debian 12 ships 0.14 (use a TLS tunnel such as stunnel and redis://)"
                : "a Redis URL starts with redis://, not \(url.prefix(16))")
        }
        var rest = Substring(url.dropFirst("redis://".count))
        var endpoint = RedisEndpoint()
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let password = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).last.map(String.init) ?? ""
            endpoint.password = password.isEmpty ? nil : password
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
        "redis://\(password == nil ? "" : ":***@")\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
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
