import Deflate
import Foundation
import Testing
@testable import SyncServer

/// What a hostile client must not be able to do to the server, its log or other users
/// (issue 17's reproductions, each as a class of attack).
@Suite("Hostile clients")
struct HostileClientTests {
    /// Issue 17.5: 50 connections each start a compressed message whose 15 KB inflate to
    /// 15 MiB and never finish it. The process-wide budget closes most of them with 1013;
    /// RSS rises by at most 100 MiB and comes back to within 32 MiB once they close.
    @Test func unfinishedCompressedMessagesAreBoundedAcrossConnections() throws {
        let server = try ServerProcess()
        _ = try httpGet("/healthz", port: server.port)  // first-use set-up is not the attack's
        let baseline = server.residentKiB
        var compressed = [UInt8]()
        [UInt8](repeating: 0, count: 15 << 20).withUnsafeBytes { Deflater().compress($0, into: &compressed) }
        #expect(compressed.count < 20_000)
        let frame = maskedFrame(0x2, compressed, fin: false, rsv: 0x40)
        var clients = [RawClient]()
        var peak = baseline
        for _ in 0..<50 {
            let client = try RawClient(port: server.port)
            #expect(client.upgrade(headers: ["Sec-WebSocket-Extensions: permessage-deflate"]).contains("permessage-deflate"))
            client.send(frame)
            clients.append(client)
            peak = max(peak, server.residentKiB)
        }
        var refused = 0
        for client in clients where closeCode(in: client.receive(atLeast: 4, timeout: 0.2)) == 1013 { refused += 1 }
        peak = max(peak, server.residentKiB)
        #expect(refused >= 40, "most are over the budget: \(refused) of 50 closed with 1013")
        #expect(peak - baseline <= 100 << 10, "RSS rose from \(baseline) to \(peak) KiB")
        #expect(try metricValue("scrollsync_unfinished_messages_closed_total", port: server.port) >= Double(refused))
        clients.removeAll()
        // The server learns of the closes on its own time: wait for it to have let go.
        #expect(try eventually { try metricValue("scrollsync_unfinished_message_bytes", port: server.port) == 0 },
                "the budget is given back once they close")
        #expect(eventually { server.residentKiB - baseline <= 32 << 10 }, "RSS \(server.residentKiB) KiB after they closed, baseline \(baseline) KiB")
    }

    /// Issue 17.2: 10,050 follower upgrades to new rooms from one address no longer fill the
    /// room table: past the unclaimed-room count they get 429 with Retry-After, a presenter
    /// from another address creates a room at once, and the followers' rooms go as soon as
    /// they leave.
    /// Issue 17.6: a follower that never reads while the presenter shares a 1 MiB document
    /// every 50 ms (no rate limit here) costs the server a few MiB: a newer document replaces
    /// an unsent one in the follower's queue.
    @Test func documentsConflateForAFollowerThatDoesNotRead() throws {
        let server = try ServerProcess(environment: ["SCROLLSYNC_LIMITS_DOCUMENTS_PER_MINUTE": "0"])
        let presenter = try RoomConnection(port: server.port, path: "/rooms/docs?role=presenter&key=k")
        #expect(presenter.wait { $0.contains("\"type\":\"welcome\"") })
        let stalled = try RawClient(port: server.port)
        #expect(stalled.upgrade(path: "/rooms/docs").hasPrefix("HTTP/1.1 101 "))
        presenter.send(#"{"type":"scroll","offset":1}"#)
        #expect(presenter.wait { $0.contains("\"offset\":1,") })
        let baseline = server.residentKiB
        let filler = String(repeating: "lorem ipsum ", count: (1 << 20) / 12 - 20)
        var peak = baseline
        for index in 0..<40 {
            let document = #"{"type":"document","name":"d.md","format":"markdown","text":"\#(index) \#(filler)"}"#
            presenter.client.send(maskedFrame(0x1, Array(document.utf8), key: [0, 0, 0, 0]))
            _ = presenter.wait(timeout: 0.05) { _ in false }  // the presenter reads its own echo
            peak = max(peak, server.residentKiB)
        }
        // A generous deadline: on a busy machine 40 MiB of echoes take a while to read.
        #expect(presenter.wait(timeout: 60) { $0.hasPrefix(#"{"type":"document""#) && $0.contains(#""text":"39 "#) }, "the last document went out")
        peak = max(peak, server.residentKiB)
        #expect(peak - baseline < 16 << 10, "the server's RSS rose from \(baseline) to \(peak) KiB for 40 MiB of documents")
        withExtendedLifetime(stalled) {}
    }

    /// Values that quote the request (`role=…`) cannot forge a log line or carry an escape
    /// sequence into the log or the 400's body.
    @Test func requestTextCannotForgeLogLinesOrEscapeSequences() throws {
        let server = try ServerProcess()
        let forged = "%0a2026-11-25T00:00:00.000Z%20critical%20forged%20line%1b]0;title%07%1b[2J%c2%9b"
        let client = try RawClient(port: server.port)
        let head = client.upgrade(path: "/rooms/logs?role=\(forged)")
        let (rest, _) = client.receiveUntilClosed(timeout: 5)
        let answer = head + String(decoding: rest, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 400 "))
        let body = answer.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        #expect(body.contains("\u{240A}2026"), "the newline is shown as a picture: \(body.debugDescription)")
        #expect(!body.unicodeScalars.dropLast().contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }, "\(body.debugDescription)")
        #expect(server.child.waitForOutput(timeout: 10) { $0.contains { $0.contains("status=400") } })
        let lines = server.child.lines
        #expect(!lines.contains { $0.contains("critical forged") && !$0.contains("refused") }, "a forged line: \(lines)")
        #expect(!server.child.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
    }
}

/// TLS offers forward-secret AEAD suites only (issue 17: RSA key exchange and CBC were accepted).
@Suite("TLS suites")
struct TLSSuiteTests {
    /// An RSA certificate, so that RSA key exchange could be negotiated if it were offered.
    static let rsaCertificate: (cert: String, key: String) = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("scrollsync-rsa-\(getpid())")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        _ = try? run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost"])
        return (cert, key)
    }()

    /// Whether `openssl s_client` completes a TLS 1.2 handshake offering only `cipher`.
    static func handshakes(port: Int, cipher: String) throws -> (Bool, String) {
        let result = try run("openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-cipher", cipher, "-brief"], timeout: 20)
        return (result.output.contains("Ciphersuite: \(cipher)"), result.output)
    }

    @Test func onlyForwardSecretAEADSuitesAreNegotiated() throws {
        let tls = Self.rsaCertificate
        let server = try InProcessNode {
            $0.tlsCertificateFile = tls.cert
            $0.tlsKeyFile = tls.key
        }
        for weak in ["AES128-SHA", "AES256-SHA256", "AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384", "DHE-RSA-AES128-GCM-SHA256"] {
            let (accepted, output) = try Self.handshakes(port: server.port, cipher: weak)
            #expect(!accepted, "\(weak) was negotiated: \(output)")
        }
        for strong in ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"] {
            let (accepted, output) = try Self.handshakes(port: server.port, cipher: strong)
            #expect(accepted, "\(strong) was refused: \(output)")
        }
        let tls13 = try run("openssl", ["s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1_3", "-brief"], timeout: 20)
        #expect(tls13.output.contains("TLSv1.3"), "\(tls13.output)")
    }

}

/// TLS failures are said in words and stop the client where retrying cannot help (issue 18.6).
@Suite("TLS failures in words")
struct TLSFailureTests {
    @Test func untrustedCertificatesWrongSchemesAndPlainServersAreNamed() throws {
        let tls = try ServerProcess(["--tls-cert", testCertificate.cert, "--tls-key", testCertificate.key])
        let plain = try ServerProcess()
        let cases: [(url: String, says: String)] = [
            ("wss://127.0.0.1:\(tls.port)/rooms/a", "certificate is not trusted: self-signed certificate"),
            ("ws://127.0.0.1:\(tls.port)/rooms/a", "this server speaks TLS: use wss://"),
            ("wss://127.0.0.1:\(plain.port)/rooms/a", "not a TLS server"),
        ]
        for (url, says) in cases {
            let result = try run(ServerProcess.binary.path, ["follow", "--json", url], timeout: 20)
            #expect(result.status == 1, "\(url): exits 1 rather than retrying: \(result.output)")
            #expect(result.output.contains(says), "\(url): \(result.output)")
            #expect(!result.output.contains("reconnecting"), "\(url): no retry loop: \(result.output)")
        }
        // With --insecure the self-signed server is fine: follow stays connected until stopped.
        let insecure = try Child(ServerProcess.binary.path, ["follow", "--json", "--insecure", "wss://127.0.0.1:\(tls.port)/rooms/a"])
        func followers() -> Bool {
            let metrics = (try? run("curl", ["-sk", "https://127.0.0.1:\(tls.port)/metrics"], timeout: 10).output) ?? ""
            return metrics.contains("scrollsync_room_members{role=\"follower\"} 1")
        }
        #expect(eventually { followers() || !insecure.isRunning }, "\(insecure.output)")
        #expect(insecure.isRunning && followers(), "\(insecure.output)")
        insecure.stop()
    }
}
