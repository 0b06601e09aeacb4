import Foundation
import Testing

/// A `scrollsync serve` process on a free loopback port, stopped when released.
final class ServerProcess: @unchecked Sendable {
    let child: Child
    let port: Int
    let url: String

    /// The `scrollsync` binary built next to this test bundle.
    static var binary: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("scrollsync")
    }

    /// Rooms stay in memory unless `arguments` name a data directory.
    init(_ arguments: [String] = [], environment: [String: String] = [:]) throws {
        let store = arguments.contains("--data-dir") ? [] : ["--in-memory"]
        let child = try Child(Self.binary.path, ["serve", "--port", "0"] + store + arguments, environment: environment)
        self.child = child
        // The first line names the URL: "scrollsync: serving ws://127.0.0.1:PORT ...".
        var found: String?
        _ = child.waitForOutput(timeout: 20) { lines in
            found = lines.lazy.compactMap { $0.firstMatch(of: /wss?:\/\/[^ ]+:\d+/).map { String($0.0) } }.first
            return found != nil || !child.isRunning
        }
        guard let found else {
            child.stop()
            throw Failure("server did not start: \(child.output)")
        }
        url = found
        port = Int(url.split(separator: ":").last!)!
    }

    deinit { stop() }

    func stop() { child.stop() }

    var pid: Int32 { child.pid }
    var isRunning: Bool { child.isRunning }

    /// Open descriptors of the server process.
    var openDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// Resident memory of the server process, in KiB.
    var residentKiB: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return -1 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}

/// Waits up to `timeout` seconds for `condition` to hold, checking every 50 ms.
func eventually(timeout: TimeInterval = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(50_000)
    }
    return try condition()
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The folder of peer scripts beside these tests.
let peersDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Peers")

/// A throwaway self-signed certificate and key for wss:// tests.
let testCertificate: (cert: String, key: String) = {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("scrollsync-tls-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let cert = directory.appendingPathComponent("cert.pem").path
    let key = directory.appendingPathComponent("key.pem").path
    _ = try? run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost"])
    return (cert, key)
}()
