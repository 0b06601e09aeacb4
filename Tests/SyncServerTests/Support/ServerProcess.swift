import Foundation
import Testing

/// A `scrollsync serve` process on a free loopback port, stopped when released.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    let port: Int
    let url: String
    private let output = Pipe()

    /// The `scrollsync` binary built next to this test bundle.
    static var binary: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("scrollsync")
    }

    init(_ arguments: [String] = []) throws {
        process.executableURL = Self.binary
        process.arguments = ["serve", "--port", "0"] + arguments
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // The first line names the URL: "scrollsync: serving ws://127.0.0.1:PORT ...".
        let line = Self.readLine(output.fileHandleForReading, timeout: 20)
        guard let range = line.range(of: #"wss?://[^ ]+:(\d+)"#, options: .regularExpression) else {
            process.terminate()
            throw Failure("server did not start: \(line)")
        }
        url = String(line[range])
        port = Int(url.split(separator: ":").last!)!
    }

    deinit { stop() }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

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

    private static func readLine(_ handle: FileHandle, timeout: TimeInterval) -> String {
        var collected = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(handle.fileDescriptor, &byte, 1) == 1 else { break }
            if byte == 10 { break }
            collected.append(byte)
        }
        return String(decoding: collected, as: UTF8.self)
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs a command to completion (killed after `timeout`) and returns its status and output.
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 300) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let timer = DispatchWorkItem { if process.isRunning { process.terminate() } }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: timer)
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    timer.cancel()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
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
