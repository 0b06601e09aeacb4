import Foundation
import ScrollModel
import Synchronization
@testable import SyncClient
import Transport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The server under systemd (issue 31): it says READY=1, RELOADING=1 and STOPPING=1 on the
/// socket `$NOTIFY_SOCKET` names, takes `$STATE_DIRECTORY` as its data directory, and on
/// SIGHUP serves new handshakes with a renewed certificate while every open connection stays;
/// a certificate that does not load is refused and the old one kept. These need a process
/// (signals, environment).
@Suite("Living under systemd")
struct ServiceTests {
    /// A datagram socket bound at a fresh path, as systemd's notify socket is.
    final class NotifySocket {
        let path: String
        private let fd: Int32

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8))").path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw Failure("cannot bind \(path): errno \(errno)") }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(fd)
            unlink(path)
        }

        /// The next datagram (waits up to 20 s), or nil.
        func next() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
        }
    }

    @Test func itSaysReadyReloadingAndStoppingOnTheNotifySocket() throws {
        let notify = try NotifySocket()
        let server = try ServerProcess([], environment: ["NOTIFY_SOCKET": notify.path])
        let ready = notify.next()
        #expect(ready?.split(separator: "\n").contains("READY=1") == true, "\(ready ?? "nothing")")
        #expect(ready?.contains("STATUS=serving \(server.url)") == true)
        server.child.signal(SIGHUP)
        let reloading = notify.next()
        #expect(reloading?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true, "\(reloading ?? "nothing")")
        #expect(notify.next()?.hasPrefix("READY=1") == true, "ready again after the reload")
        #expect(server.isRunning, "SIGHUP does not end the server")
        server.child.signal(SIGTERM)
        #expect(notify.next()?.hasPrefix("STOPPING=1") == true)
        #expect(server.child.wait(timeout: 20) == 0)
    }

    /// The certificate the server shows a new handshake (its subject).
    static func subject(port: Int) throws -> String {
        let answer = try run("openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-brief"], timeout: 20)
        return answer.output.split(separator: "\n").first { $0.contains("Peer certificate") }.map(String.init) ?? answer.output
    }

    static func makeCertificate(_ name: String, in directory: String) throws -> (cert: String, key: String) {
        let cert = directory + "/\(name).crt", key = directory + "/\(name).key"
        let made = try run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                       "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=\(name)"])
        guard made.status == 0 else { throw Failure("openssl req: \(made.output)") }
        return (cert, key)
    }

    /// Synchronous on purpose (the callback client, not `RoomSession`): an async test waits for
    /// a free thread of the shared pool after every `await`, and in a full run blocking tests
    /// hold them all for minutes.
    @Test(.timeLimit(.minutes(1))) func aRenewedCertificateServesNewHandshakesWhileOpenConnectionsStay() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rotate-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try Self.makeCertificate("first", in: directory), second = try Self.makeCertificate("second", in: directory)
        let cert = directory + "/cert.pem", key = directory + "/key.pem"
        func install(_ pair: (cert: String, key: String)) throws {
            for (from, to) in [(pair.cert, cert), (pair.key, key)] {
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: from, toPath: to)
            }
        }
        try install(first)
        let server = try ServerProcess(["--tls-cert", cert, "--tls-key", key])
        let before = try Self.subject(port: server.port)
        #expect(before.contains("CN = first"), "\(before)")

        var options = RoomOptions()
        options.verifyTLS = false
        let group = try EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let presenterEvents = Mutex<[RoomClient.Event]>([]), followerEvents = Mutex<[RoomClient.Event]>([])
        let presenter = try RoomClient(urls: [try WebSocketURL(parsing: server.url + "/rooms/talk?role=presenter&key=k")], loop: group.loops[0],
                                       options: options) { event in presenterEvents.withLock { $0.append(event) } }
        let follower = try RoomClient(urls: [try WebSocketURL(parsing: server.url + "/rooms/talk")], loop: group.loops[0],
                                      options: options) { event in followerEvents.withLock { $0.append(event) } }
        group.start()
        presenter.start()
        follower.start()
        defer { presenter.stopAndWait(); follower.stopAndWait() }
        func welcomed(_ events: borrowing Mutex<[RoomClient.Event]>) -> Int? {
            events.withLock { $0.firstIndex { if case .message(.welcome) = $0 { true } else { false } } }
        }
        #expect(eventually { welcomed(presenterEvents) != nil && welcomed(followerEvents) != nil }, "both joined over wss")
        let joined = welcomed(followerEvents) ?? 0

        try install(second)
        server.child.signal(SIGHUP)
        #expect(server.child.waitForOutput { $0.contains { $0.contains("reloaded") && $0.contains("certificate=\"read again\"") } },
                "\(server.child.output)")
        #expect(try Self.subject(port: server.port).contains("CN = second"), "a new handshake sees the new certificate")

        // The connections opened before the reload carry on, never reconnecting.
        presenter.send(.scroll(ScrollUpdate(offset: 42, viewport: 10, content: 100)))
        #expect(eventually { followerEvents.withLock { $0.contains { if case .message(.state(let state)) = $0 { state.offset == 42 } else { false } } } },
                "the follower opened before the reload gets the move")
        let since = followerEvents.withLock { Array($0[(joined + 1)...]) }
        #expect(!since.contains { if case .status = $0 { true } else { false } }, "and never reconnected: \(since)")

        // A broken certificate is refused; the renewed one stays.
        try "not a certificate".write(toFile: cert, atomically: true, encoding: .utf8)
        server.child.signal(SIGHUP)
        #expect(server.child.waitForOutput { $0.contains { $0.contains("reload refused") && $0.contains("cert.pem") } }, "\(server.child.output)")
        #expect(try Self.subject(port: server.port).contains("CN = second"))
        #expect(server.isRunning)
    }
}
