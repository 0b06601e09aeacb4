import Foundation
import Testing

/// Bad input gets a clear answer and never takes the server down or leaks.
@Suite("Bad input")
struct BadInputTests {
    @Test func halfHandshakeIsDroppedAfterTheHandshakeTimeout() throws {
        let server = try ServerProcess(["--handshake-timeout", "1"])
        let client = try RawClient(port: server.port)
        client.send("GET /echo HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n")
        let started = Date()
        let (bytes, closed) = client.receiveUntilClosed(timeout: 10)
        #expect(closed, "still connected after 10 s")
        #expect(Date().timeIntervalSince(started) >= 0.5, "dropped before the timeout")
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408 "))
    }

    @Test(arguments: [
        ("\u{16}\u{3}\u{1}garbage\r\n\r\n", "400"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "z", count: 10_000))\r\n\r\n", "431"),
        ("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", "404"),
        ("POST /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", "405"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", "426"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n", "426"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n", "400"),
        ("GET /echo HTTP/3.0\r\n\r\n", "505"),
    ])
    func badRequestsGetTheRightStatusAndAReason(_ request: String, _ status: String) throws {
        let server = try ServerProcess()
        let client = try RawClient(port: server.port)
        client.send(request)
        let (bytes, closed) = client.receiveUntilClosed(timeout: 5)
        let answer = String(decoding: bytes, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(answer)")
        #expect(answer.contains("\r\n\r\n") && !answer.hasSuffix("\r\n\r\n"), "a body says what was wrong: \(answer)")
        #expect(closed)
        if status == "426" { #expect(answer.contains("Sec-WebSocket-Version: 13")) }
    }

    @Test(arguments: [
        ("unmasked frame", [0x81, 0x02, 0x68, 0x69] as [UInt8], 1002),
        ("reserved opcode", maskedFrame(0x5, []), 1002),
        ("reserved bits", maskedFrame(0x1, Array("x".utf8), rsv: 0x20), 1002),
        ("invalid UTF-8", maskedFrame(0x1, [0xCE, 0xBA, 0xED, 0xA0, 0x80]), 1007),
        ("oversized control frame", maskedFrame(0x9, [UInt8](repeating: 0, count: 126)), 1002),
        ("frame over 16 MiB", [0x82, 0xFF, 0, 0, 0, 0, 1, 0, 0, 1, 1, 2, 3, 4], 1009),
    ])
    func badFramesCloseWithTheRFCCode(_ name: String, _ frame: [UInt8], _ code: Int) throws {
        let server = try ServerProcess()
        let client = try RawClient(port: server.port)
        #expect(client.upgrade().hasPrefix("HTTP/1.1 101 "))
        client.send(frame)
        let (bytes, closed) = client.receiveUntilClosed(timeout: 5)
        #expect(closeCode(in: bytes) == code, "\(name): \(bytes.prefix(16))")
        #expect(closed, "\(name): the server closes the TCP connection")
        // Others are still served.
        let other = try RawClient(port: server.port)
        #expect(other.upgrade().hasPrefix("HTTP/1.1 101 "))
        other.send(maskedFrame(0x1, Array("still here".utf8)))
        #expect(other.receive(atLeast: 12, timeout: 5) == [0x81, 10] + Array("still here".utf8))
    }

    /// 1,000 connections upgrade, send half a frame, and vanish; twice. Descriptors return
    /// to where they were and memory does not grow from one round to the next.
    @Test func vanishingConnectionsLeaveNothingBehind() throws {
        let server = try ServerProcess(["--loops", "2"])
        let baselineDescriptors = server.openDescriptors

        func round() throws {
            var clients = [RawClient]()
            for _ in 0..<1000 { clients.append(try RawClient(port: server.port)) }
            for client in clients {
                client.send("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            }
            for client in clients { _ = client.receive(atLeast: 129, timeout: 5) }
            // Half a frame: header says 1000 bytes, 10 arrive.
            for client in clients { client.send(Array(maskedFrame(0x2, [UInt8](repeating: 7, count: 1000)).prefix(18))) }
            #expect(server.openDescriptors >= baselineDescriptors + 1000, "the server held them all at once")
            clients.removeAll()  // closes every socket
        }

        func settledDescriptors() -> Int {
            for _ in 0..<50 where server.openDescriptors > baselineDescriptors { usleep(100_000) }
            return server.openDescriptors
        }

        try round()
        #expect(settledDescriptors() == baselineDescriptors)
        let afterFirst = server.residentKiB
        try round()
        #expect(settledDescriptors() == baselineDescriptors)
        let afterSecond = server.residentKiB
        #expect(afterSecond - afterFirst < 2048, "RSS grew from \(afterFirst) KiB to \(afterSecond) KiB")
        #expect(server.isRunning)

        let client = try RawClient(port: server.port)
        #expect(client.upgrade().hasPrefix("HTTP/1.1 101 "))
        client.send(maskedFrame(0x1, Array("alive".utf8)))
        #expect(client.receive(atLeast: 7, timeout: 5) == [0x81, 5] + Array("alive".utf8))
    }
}
