import Foundation
import Operations
@testable import SyncServer

/// A server a test talks to over loopback TCP: a child process (`ServerProcess`) where the test
/// needs one (signals, `kill -9`, RSS), or a `Server` in the test's own process (`InProcessNode`)
/// where it does not (issue 28.3: nodes sharing rooms through Redis).
protocol ServerNode: AnyObject {
    var port: Int { get }
    var url: String { get }
    /// What it logged so far.
    var output: String { get }
    /// Still serving (a process: running; in process: it accepts connections).
    var isRunning: Bool { get }
}

extension ServerProcess: ServerNode {
    var output: String { child.output }
}

/// `scrollsync serve` as a `Server` in this process, on loops of its own and a free port,
/// in memory; its log is captured. Shut down when released.
final class InProcessNode: ServerNode, @unchecked Sendable {
    let server: Server
    let log = CapturedLog()

    init(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = nil
        adjust(&configuration)
        server = try Server(configuration: configuration, logger: log.logger)
    }

    /// A node sharing rooms through `redis` (and `shards`).
    convenience init(redis: String, shards: [String] = []) throws {
        try self.init {
            $0.redisURL = redis
            $0.redisShards = shards
        }
    }

    deinit { server.shutdown() }

    var port: Int { server.port }
    var url: String { server.url }
    var output: String { log.text }
    var isRunning: Bool { (try? RawClient(port: port)) != nil }
}
