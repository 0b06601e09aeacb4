import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A certificate or key path that names a FIFO, a directory or a device (issue 44): refused
/// with a reason, never opened to wait on (a FIFO with no writer would hang the start, or
/// the reload and every signal behind it). At start: exit 78; on reload: an error line, and
/// the running certificate stays.
@Suite("Certificate and key files must be regular files")
struct CertificateFileTests {
    enum Kind: String, CaseIterable, Sendable { case fifo, directory, device }

    /// Something of `kind` at a fresh path in `directory` (the device is /dev/zero: it never ends).
    static func make(_ kind: Kind, in directory: String) throws -> (path: String, says: String) {
        let path = directory + "/not-a-file.pem"
        switch kind {
        case .fifo:
            guard mkfifo(path, 0o600) == 0 else { throw Failure("mkfifo: errno \(errno)") }
            return (path, "it is a FIFO, not a regular file")
        case .directory:
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            return (path, "it is a directory, not a regular file")
        case .device:
            return ("/dev/zero", "it is a character device, not a regular file")
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: [("tls.key", Kind.fifo), ("tls.certificate", .directory), ("tls.key", .device), ("tls.certificate", .fifo)])
    func atStartItIsRefusedWithExit78(setting: String, kind: Kind) throws {
        let directory = try temporaryDirectory("tls-\(kind)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try ServiceTests.makeCertificate("start", in: directory)
        let (path, says) = try Self.make(kind, in: directory)
        let cert = setting == "tls.certificate" ? path : pair.cert, key = setting == "tls.key" ? path : pair.key
        let result = try run(ServerProcess.binary.path, ["serve", "--port", "0", "--in-memory", "--tls-cert", cert, "--tls-key", key], timeout: 20)
        #expect(result.status == 78, "\(result.output)")
        #expect(result.output.contains("\(setting): cannot read \(path): \(says)"), "\(result.output)")
    }

    @Test(.timeLimit(.minutes(1)), arguments: Kind.allCases)
    func onReloadItIsRefusedAndTheRunningCertificateStays(kind: Kind) throws {
        let directory = try temporaryDirectory("tls-reload-\(kind)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try ServiceTests.makeCertificate("running", in: directory)
        let key = directory + "/key.pem"
        try FileManager.default.copyItem(atPath: pair.key, toPath: key)
        let server = try ServerProcess(["--tls-cert", pair.cert, "--tls-key", key])
        try FileManager.default.removeItem(atPath: key)
        let (path, says) = try Self.make(kind, in: directory)
        if path != key { try FileManager.default.createSymbolicLink(atPath: key, withDestinationPath: path) }  // key.pem → it

        server.child.signal(SIGHUP)
        #expect(server.child.waitForOutput(timeout: 20) { $0.contains { $0.contains("reload refused") && $0.contains("tls.key: cannot read \(key): \(says)") } },
                "\(server.child.output)")
        #expect(server.isRunning)
        #expect(try ServiceTests.subject(port: server.port).contains("CN = running"), "new handshakes still get the running certificate")
        server.child.signal(SIGTERM)
        #expect(server.child.wait(timeout: 20) == 0)
    }
}
