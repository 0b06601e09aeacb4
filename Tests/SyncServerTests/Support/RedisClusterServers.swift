import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Redis Cluster of three masters with a replica each (six `redis-server`s on loopback,
/// `redis-cli --cluster create`), owned by a test: nothing is saved beyond its temporary
/// directory, every server is killed when it is released.
final class RedisClusterServers: @unchecked Sendable {
    let ports: [Int]
    private var children: [Int: Child] = [:]
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("scrollsync-cluster-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var ports = [Int]()
        while ports.count < 6 {
            let port = try freePort()
            // The cluster bus listens on port + 10000: it must be free as well, and below 65536.
            if port + 10_000 < 65_536, !ports.contains(port) { ports.append(port) }
        }
        self.ports = ports
        for port in ports {
            let child = try Child("/usr/bin/env", ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                                                   "--cluster-config-file", "nodes-\(port).conf", "--cluster-node-timeout", "1000",
                                                   "--dir", directory.path, "--save", "", "--appendonly", "no", "--daemonize", "no"])
            children[port] = child
            guard child.waitForOutput(timeout: 20, { lines in lines.contains { $0.contains("Ready to accept connections") } || !child.isRunning }),
                  child.isRunning else {
                throw Failure("redis-server did not start in cluster mode: \(child.output)")
            }
        }
        let created = try run("redis-cli", ["--cluster", "create"] + ports.map { "127.0.0.1:\($0)" } + ["--cluster-replicas", "1", "--cluster-yes"], timeout: 60)
        guard created.status == 0 else { throw Failure("redis-cli --cluster create failed: \(created.output)") }
        // Ready when every node says so and every replica is in sync with its master (so that it
        // may take over when its master fails).
        guard eventually(timeout: 30, {
            ports.allSatisfy { (try? self.cli($0, "cluster", "info"))?.contains("cluster_state:ok") == true }
                && ports.filter { (try? self.cli($0, "info", "replication"))?.contains("master_link_status:up") == true }.count == 3
        }) else { throw Failure("the cluster did not become ready: \((try? cli(ports[0], "cluster", "nodes")) ?? "")") }
    }

    deinit {
        for child in children.values { child.signal(SIGKILL) }
        for child in children.values { _ = child.wait(timeout: 10) }
        try? FileManager.default.removeItem(at: directory)
    }

    var url: String { "redis://127.0.0.1:\(ports[0])" }

    /// `redis-cli -p PORT ARGUMENTS…` (raw output).
    func cli(_ port: Int, _ arguments: String...) throws -> String {
        let result = try run("redis-cli", ["-p", String(port), "--raw"] + arguments, timeout: 20)
        guard result.status == 0 else { throw Failure("redis-cli \(arguments): \(result.output)") }
        return result.output
    }

    /// The masters' ports, from a node that answers.
    func masters() throws -> [Int] {
        let asker = try require2(children.keys.sorted().first { children[$0]?.isRunning == true })
        return try cli(asker, "cluster", "nodes").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 3, fields[2].contains("master"), !fields[2].contains("fail") else { return nil }
            return fields[1].split(separator: ":").last.flatMap { $0.split(separator: "@").first }.flatMap { Int($0) }
        }
    }

    /// The port of the master that holds `key` now.
    func master(of key: String) throws -> Int? {
        for port in try masters() where try cli(port, "exists", key).trimmingCharacters(in: .whitespacesAndNewlines) == "1" { return port }
        return nil
    }

    /// Kills one server at once (SIGKILL: as if its machine went away).
    func kill(_ port: Int) {
        children[port]?.signal(SIGKILL)
        _ = children[port]?.wait(timeout: 10)
    }
}

/// `value`, or a test failure that says what was missing.
private func require2<T>(_ value: T?) throws -> T {
    guard let value else { throw Failure("no node of the cluster answers") }
    return value
}
