import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A `redis-server` (Debian: redis-server) on a free loopback port, owned by a test, so
/// that the test may stop and start it. Nothing is saved to disk.
final class RedisServer: @unchecked Sendable {
    let port: Int
    private var child: Child?

    /// Over TLS only (`--tls-port`), with this certificate and key.
    private let tls: (cert: String, key: String)?

    /// A Redis this test may stop and start; with `tls`, it speaks only TLS.
    init(tls: (cert: String, key: String)? = nil) throws {
        port = try freePort()
        self.tls = tls
        try start()
    }

    private init(port: Int) {
        self.port = port
        tls = nil
    }

    /// The Redis CI started (`TEST_REDIS_URL=redis://127.0.0.1:PORT`), or one of
    /// this test's own. Tests that share it use room names of their own.
    static func shared() throws -> RedisServer {
        if let url = ProcessInfo.processInfo.environment["TEST_REDIS_URL"],
           let port = url.split(separator: ":").last.flatMap({ Int($0) }) {
            return RedisServer(port: port)
        }
        return try RedisServer()
    }

    deinit { stop() }

    var url: String { tls == nil ? "redis://127.0.0.1:\(port)" : "rediss://localhost:\(port)" }

    func start() throws {
        let listen = tls.map { ["--port", "0", "--tls-port", String(port), "--tls-cert-file", $0.cert, "--tls-key-file", $0.key,
                                "--tls-ca-cert-file", $0.cert, "--tls-auth-clients", "no"] } ?? ["--port", String(port)]
        let child = try Child("/usr/bin/env", ["redis-server"] + listen + ["--bind", "127.0.0.1", "--save", "",
                                                                           "--appendonly", "no", "--daemonize", "no"])
        self.child = child
        guard child.waitForOutput(timeout: 20, { lines in lines.contains { $0.contains("Ready to accept connections") } || !child.isRunning }),
              child.isRunning else {
            throw Failure("redis-server did not start (apt-get install redis-server): \(child.output)")
        }
    }

    /// Runs one command with `redis-cli` against it; throws when it fails or Redis answers
    /// with an error (redis-cli exits 0 then).
    func cli(_ arguments: [String]) throws {
        let result = try run("/usr/bin/env", ["redis-cli", "-p", String(port)] + arguments, timeout: 20)
        guard result.status == 0, !result.output.contains("ERR") else { throw Failure("redis-cli \(arguments.prefix(2)): \(result.output)") }
    }

    /// Freezes it (SIGSTOP): connections stay open and nothing answers.
    func freeze() { child?.signal(SIGSTOP) }
    func thaw() { child?.signal(SIGCONT) }

    /// Stops it at once (SIGKILL: as if the machine went away); its data is gone.
    func stop() {
        child?.signal(SIGKILL)
        _ = child?.wait(timeout: 10)
        child = nil
    }
}

/// A TCP port nobody listens on now.
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw Failure("no free port: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
