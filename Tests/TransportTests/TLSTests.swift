import Bytes
import Foundation
import Testing
@testable import Transport

/// Throwaway self-signed certificates (made once: tests run in parallel).
let localhostCertificate = try? makeCertificate("localhost")
let renewedCertificate = try? makeCertificate("renewed.example")

/// A throwaway self-signed certificate and key for `name`, made by the `openssl` command.
func makeCertificate(_ name: String) throws -> (cert: String, key: String) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("transport-tls-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let cert = directory.appendingPathComponent("\(name).crt").path, key = directory.appendingPathComponent("\(name).key").path
    if !FileManager.default.fileExists(atPath: cert) {
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=\(name)"]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
    return (cert, key)
}

/// One end of an in-process connection: what its handler hears (on the test's thread, which
/// steps the loop). With `echo` it sends back what it reads; `answer` is sent for any read.
final class Endpoint: ChannelHandler {
    var received: [UInt8] = []
    var failure: TLSFailure?
    var closed = false
    var writableHeard = 0
    var echo = false
    var answer: [UInt8]?
    /// Sent in plain text when TLS fails (as the server's 400 for plain HTTP on a TLS port).
    var unencryptedAnswer: [UInt8]?

    func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {
        received += bytes
        if echo { channel.enqueue(SharedBytes(Array(bytes))) }
        if let answer { channel.enqueue(SharedBytes(answer)) }
    }
    func channelWritable(_ channel: Channel) { writableHeard += 1 }
    func channelFailed(_ channel: Channel, _ failure: TLSFailure) {
        self.failure = failure
        if let unencryptedAnswer { channel.sendUnencrypted(unencryptedAnswer) }
    }
    func channelClosed(_ channel: Channel) { closed = true }
}

/// TLS as a layer over the loop's I/O (STYLE 10): libssl reads and writes ciphertext through
/// the channel's connection, so a client and a server run both ends of wss on an embedded
/// loop, with no socket. Handshake, partial writes, backpressure, close_notify, failures in
/// words and a certificate reload, each stepped by hand.
@Suite("TLS over the loop's I/O (embedded loop)")
struct EmbeddedTLSTests {
    let loop: EventLoop
    let certificate: (cert: String, key: String)
    let serverContext: TLSContext

    init() throws {
        loop = try EventLoop.embedded()
        certificate = try #require(localhostCertificate, "openssl req failed")
        serverContext = try TLSContext(certificateChainFile: certificate.cert, privateKeyFile: certificate.key)
    }

    /// A server end (TLS with `serverTLS`) and a client linked to it. The client's first
    /// bytes (queued here) start its handshake, as a WebSocket client's request does.
    func connect(serverTLS: TLSContext?, client: TLSContext?, serverName: String = "localhost", verifyHostName: Bool = true)
        throws -> (server: EmbeddedConnection, serverEnd: Endpoint, client: EmbeddedConnection, clientEnd: Endpoint) {
        loop.advance()  // the test's thread steps the loop
        let serverEnd = Endpoint(), clientEnd = Endpoint()
        let server = try loop.connectEmbedded(tls: serverTLS) { _ in serverEnd }
        let connection = try loop.connectEmbedded(to: server, tls: client, serverName: serverName, verifyHostName: verifyHostName) { _ in clientEnd }
        connection.channel.enqueue(SharedBytes(Array("hello".utf8)))
        return (server, serverEnd, connection, clientEnd)
    }

    func trusting() throws -> TLSContext { try TLSContext(clientVerifying: true, caFile: certificate.cert) }

    @Test func aVerifiedHandshakeCarriesBytesBothWays() throws {
        let (server, serverEnd, client, clientEnd) = try connect(serverTLS: serverContext, client: try trusting())
        serverEnd.echo = true
        client.channel.enqueue(SharedBytes(Array(" over TLS".utf8)))
        #expect(loop.advance(until: { clientEnd.received.count == 14 }), "failure: \(String(describing: clientEnd.failure))")
        #expect(String(decoding: clientEnd.received, as: UTF8.self) == "hello over TLS")
        #expect(server.channel.isTLS && client.channel.isTLS)
        #expect(clientEnd.failure == nil && serverEnd.failure == nil)
    }

    /// 3 MiB through a far end that takes 5,000 bytes a step: records are written in parts
    /// (libssl keeps the rest of one while the queue holds its plaintext), the queue goes over
    /// its high mark and back under the low one, and every byte arrives in order.
    @Test func partialWritesAndBackpressureKeepEveryByteInOrder() throws {
        let (server, serverEnd, _, clientEnd) = try connect(serverTLS: serverContext, client: try trusting())
        #expect(loop.advance(until: { serverEnd.received.count == 5 }))
        let message = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 12) }
        server.window = 0
        var statuses = [SendStatus]()
        for start in stride(from: 0, to: message.count, by: 256 << 10) {
            statuses.append(server.channel.enqueue(SharedBytes(Array(message[start..<min(message.count, start + (256 << 10))]))))
        }
        #expect(statuses.contains(.overLimit), "\(statuses)")
        loop.advance()
        #expect(clientEnd.received.isEmpty, "nothing passes a closed window")
        var steps = 0
        while clientEnd.received.count < message.count && steps < 5_000 {
            server.acceptMore(5_000)
            loop.advance()
            steps += 1
        }
        #expect(clientEnd.received == message, "\(clientEnd.received.count) of \(message.count) bytes after \(steps) steps")
        #expect(serverEnd.writableHeard == 1, "writable again once under the low mark")
        #expect(server.channel.queuedBytes == 0 && clientEnd.failure == nil)
    }

    /// A graceful close sends close_notify before the sending side's end: the client's TLS
    /// hears the peer close TLS, not just the stream end.
    @Test func aGracefulCloseSendsCloseNotify() throws {
        let (server, serverEnd, client, clientEnd) = try connect(serverTLS: serverContext, client: try trusting())
        serverEnd.echo = true
        #expect(loop.advance(until: { clientEnd.received.count == 5 }))
        let clientSession = try #require(client.channel.tls)
        server.channel.close()
        #expect(loop.advance(until: { clientEnd.closed }))
        #expect(clientSession.receivedCloseNotify)
        #expect(server.sendingShutDown && clientEnd.failure == nil)
    }

    /// A stream that ends without close_notify may have been cut short: libssl says so (as it
    /// does on a socket), and the handler hears it before the close.
    @Test func anEndWithoutCloseNotifyIsATruncation() throws {
        let (server, serverEnd, _, clientEnd) = try connect(serverTLS: serverContext, client: try trusting())
        serverEnd.echo = true
        #expect(loop.advance(until: { clientEnd.received.count == 5 }))
        server.hangUp()
        #expect(loop.advance(until: { clientEnd.closed }))
        guard case .other(let why) = clientEnd.failure else {
            Issue.record("\(String(describing: clientEnd.failure))")
            return
        }
        #expect(why.contains("unexpected eof"), "\(why)")
    }

    @Test func aSelfSignedCertificateIsNotTrusted() throws {
        let (_, _, _, clientEnd) = try connect(serverTLS: serverContext, client: try TLSContext(clientVerifying: true))
        #expect(loop.advance(until: { clientEnd.closed }))
        #expect(clientEnd.failure == .untrusted("self-signed certificate"))
        #expect(clientEnd.failure?.isPermanent == true)
    }

    @Test func aCertificateForAnotherNameIsNotTrusted() throws {
        let (_, _, _, clientEnd) = try connect(serverTLS: serverContext, client: try trusting(), serverName: "elsewhere.example")
        #expect(loop.advance(until: { clientEnd.closed }))
        #expect(clientEnd.failure == .untrusted("hostname mismatch"))
    }

    /// A TLS client whose server answers in plain text hears that it is not a TLS server.
    @Test func aPlainServerIsNotATLSServer() throws {
        let (_, serverEnd, _, clientEnd) = try connect(serverTLS: nil, client: try trusting())
        serverEnd.answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
        #expect(loop.advance(until: { clientEnd.closed }))
        #expect(clientEnd.failure == .notTLS)
    }

    /// Plain HTTP to a TLS server: the server hears `.notTLS`, and what it sends past TLS
    /// reaches the client as it is.
    @Test func plainHTTPToATLSServerIsNamedAndAnsweredInPlainText() throws {
        loop.advance()
        let serverEnd = Endpoint()
        serverEnd.unencryptedAnswer = Array("HTTP/1.1 400 Bad Request\r\n\r\nuse https".utf8)
        let server = try loop.connectEmbedded(tls: serverContext) { _ in serverEnd }
        server.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(loop.advance(until: { serverEnd.closed }))
        #expect(serverEnd.failure == .notTLS)
        #expect(String(decoding: server.read(), as: UTF8.self) == "HTTP/1.1 400 Bad Request\r\n\r\nuse https")
    }

    /// A reload serves new handshakes with the new certificate; a connection made before
    /// keeps working.
    @Test func aReloadedCertificateServesNewHandshakes() throws {
        let context = try TLSContext(certificateChainFile: certificate.cert, privateKeyFile: certificate.key)
        let (_, oldServerEnd, old, oldClientEnd) = try connect(serverTLS: context, client: try trusting())
        oldServerEnd.echo = true
        #expect(loop.advance(until: { oldClientEnd.received.count == 5 }))
        let renewed = try #require(renewedCertificate, "openssl req failed")
        try context.reload(certificateChainFile: renewed.cert, privateKeyFile: renewed.key)
        // A client that trusts only the old certificate no longer trusts the server...
        let (_, _, _, refused) = try connect(serverTLS: context, client: try trusting())
        #expect(loop.advance(until: { refused.closed }))
        #expect(refused.failure == .untrusted("self-signed certificate"))
        // ...one that trusts the new one does, by its new name.
        let (_, newServerEnd, _, newClientEnd) = try connect(serverTLS: context, client: try TLSContext(clientVerifying: true, caFile: renewed.cert),
                                                               serverName: "renewed.example")
        newServerEnd.echo = true
        #expect(loop.advance(until: { newClientEnd.received.count == 5 }), "\(String(describing: newClientEnd.failure))")
        old.channel.enqueue(SharedBytes(Array(" still".utf8)))
        #expect(loop.advance(until: { oldClientEnd.received.count == 11 }))
        #expect(String(decoding: oldClientEnd.received, as: UTF8.self) == "hello still")
    }
}
