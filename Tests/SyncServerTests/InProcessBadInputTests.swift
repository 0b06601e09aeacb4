import Foundation
import SyncServer
import Testing
import Transport

/// Bad input gets a clear answer, on the in-process server (issue 28.3): requests with the
/// right status and a reason, frames with the RFC's close code, a half handshake dropped at
/// its timeout on the embedded loop's clock. What needs a process (descriptors, RSS) stays in
/// `BadInputTests`.
@Suite("Bad input in process (embedded loop)")
struct InProcessBadInputTests {
    static let upgrade = "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

    @Test(arguments: [
        ("\u{16}\u{3}\u{1}garbage\r\n\r\n", "400"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "z", count: 10_000))\r\n\r\n", "431"),
        ("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", "404"),
        ("POST /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", "405"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", "426"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n", "426"),
        ("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n", "400"),
        ("GET /echo HTTP/3.0\r\n\r\n", "505"),
        // Room requests that cannot be rooms.
        ("GET /rooms/ HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", "400"),
        ("GET /rooms/has%20space HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", "400"),
        ("GET /rooms/ok?role=admin HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", "400"),
        ("GET /roomz/x HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", "404"),
    ])
    func badRequestsGetTheRightStatusAndAReason(_ request: String, _ status: String) throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let (bytes, closed) = exchange(Array(request.utf8), with: server, on: loop)
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
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let (bytes, closed) = exchange(Array(Self.upgrade.utf8), with: server, on: loop, then: frame)
        let answer = String(decoding: bytes, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 101 "), "\(answer.prefix(40))")
        let frames = Array(bytes[(bytes.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? 0)...])
        #expect(closeCode(in: frames) == code, "\(name): \(frames.prefix(16))")
        #expect(closed, "\(name): the server closes the connection")
        // Others are still served.
        let other = server.connectEmbedded()
        other.write(Array(Self.upgrade.utf8) + maskedFrame(0x1, Array("still here".utf8)))
        var echoed = [UInt8]()
        #expect(loop.advance(until: { echoed += other.read(); return echoed.suffix(12) == [0x81, 10] + Array("still here".utf8) }))
    }

    /// A handshake that never finishes is answered 408 and dropped at the timeout, by the
    /// loop's clock: not before it.
    @Test func halfHandshakeIsDroppedAfterTheHandshakeTimeout() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.handshakeTimeoutSeconds = 2 }
        defer { server.shutdown() }
        let connection = server.connectEmbedded()
        connection.write(Array("GET /echo HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n".utf8))
        loop.advance(by: 1_000_000_000)
        #expect(!connection.sendingShutDown && !connection.closed && connection.read().isEmpty, "not before the timeout")
        loop.advance(by: 2_000_000_000)
        loop.advance(by: 1_000_000_000)
        var answer = [UInt8]()
        #expect(loop.advance(until: { answer += connection.read(); return connection.sendingShutDown || connection.closed }))
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 408 "), "\(String(decoding: answer, as: UTF8.self))")
    }
}
