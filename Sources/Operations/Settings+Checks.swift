package import RedisClient
import ScrollModel
import Transport
#if canImport(Glibc)
import Glibc
#endif

extension Settings {
    /// Checks what no single key can: settings that only make sense together.
    public static func validate(_ configuration: ServerConfiguration) throws(ConfigurationError) {
        guard (configuration.tlsCertificateFile == nil) == (configuration.tlsKeyFile == nil) else {
            throw ConfigurationError("tls.certificate and tls.key go together")
        }
        guard configuration.limits.documentBytes <= configuration.limits.roomMessageBytes else {
            throw ConfigurationError("limits.documentBytes (\(configuration.limits.documentBytes)) cannot exceed limits.roomMessageBytes (\(configuration.limits.roomMessageBytes))")
        }
        if let url = configuration.redisURL {
            do { _ = try RedisEndpoint(url: url) } catch { throw ConfigurationError("redis.url: \(error)") }
        }
        if configuration.redisCluster {
            guard let url = configuration.redisURL else { throw ConfigurationError("redis.cluster needs redis.url: a node of the cluster") }
            for url in [url] + configuration.redisShards where (try? RedisEndpoint(url: url))?.database ?? 0 != 0 {
                throw ConfigurationError("redis.cluster: a Redis Cluster has database 0 only (\(url))")
            }
        }
        for url in configuration.redisShards {
            guard configuration.redisURL != nil else { throw ConfigurationError("redis.shards needs redis.url: the first shard") }
            do { _ = try RedisEndpoint(url: url) } catch { throw ConfigurationError("redis.shards: \(error)") }
        }
        if let secret = configuration.authSecret, secret.utf8.count < 32 {
            throw ConfigurationError("auth.secret: at least 32 characters (an HMAC-SHA256 key should be as strong as its hash; e.g. openssl rand -hex 32)")
        }
        if let secret = configuration.redisSecret {
            guard secret.utf8.count >= 32 else { throw ConfigurationError("redis.secret: at least 32 characters (e.g. openssl rand -hex 32)") }
            guard configuration.redisURL != nil else { throw ConfigurationError("redis.secret needs redis.url: it signs what nodes publish there") }
        }
        if configuration.authRequired && configuration.authSecret == nil {
            throw ConfigurationError("auth.required needs auth.secret: nobody could sign a token the server accepts")
        }
        for (key, value) in [("admin.token", configuration.adminToken), ("auth.secret", configuration.authSecret), ("redis.secret", configuration.redisSecret)] {
            if let value, value.lowercased().contains("replace-with") {
                throw ConfigurationError("\(key): replace the example's placeholder with a secret of your own (e.g. openssl rand -hex 32)")
            }
        }
    }
}

extension Settings {
    /// Checks what the configuration names outside itself, as `serve` will use it: the TLS
    /// certificate and key are regular files (never a FIFO, which would hang a start or a
    /// reload, a directory or a device), can be read and load together (a key that does not
    /// match its certificate, an expired format, a typo in a path); the Redis CA file can be read;
    /// the data directory is a writable directory, or one that can be made. Each failure names
    /// the key and the file, so that `config check` finds what would stop `serve`.
    public static func checkResources(_ configuration: ServerConfiguration) throws(ConfigurationError) {
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            for (name, path) in [("tls.certificate", certificate), ("tls.key", key)] { try requireRegularFile(name, path) }
            do {
                _ = try TLSContext(certificateChainFile: certificate, privateKeyFile: key, ciphers: configuration.tlsCiphers)
            } catch {
                throw ConfigurationError("tls.certificate and tls.key (\(certificate), \(key)) do not load: \(error)")
            }
        }
        if let file = configuration.redisCAFile { try requireRegularFile("redis.caFile", file) }
        if let directory = configuration.dataDirectory, configuration.redisURL == nil {
            var status = stat()
            if stat(directory, &status) == 0 {
                guard status.st_mode & S_IFMT == S_IFDIR else { throw ConfigurationError("store.directory: \(directory) is not a directory") }
                guard access(directory, W_OK | X_OK) == 0 else {
                    throw ConfigurationError("store.directory: \(directory) is not writable: \(String(cString: strerror(errno)))")
                }
            } else {
                // It will be made: the nearest directory that exists must take it.
                var parent = directory
                repeat {
                    parent = parent.contains("/") ? String(parent[..<parent.lastIndex(of: "/")!]) : "."
                    if parent.isEmpty { parent = "/" }
                } while stat(parent, &status) != 0 && parent != "/" && parent != "."
                guard access(parent, W_OK | X_OK) == 0 else {
                    throw ConfigurationError("store.directory: \(directory) does not exist and \(parent) is not writable: \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    /// `name`'s file can be read and is a regular file (read whole: these are small, and a
    /// CA bundle of every public root is about 200 KiB).
    private static func requireRegularFile(_ name: String, _ path: String) throws(ConfigurationError) {
        do {
            _ = try readRegularFile(path, atMost: 4 << 20)
        } catch {
            throw ConfigurationError("\(name): cannot read \(path): \(error)")
        }
    }
}
