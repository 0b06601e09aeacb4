import Foundation
import Testing

@Suite("Graceful shutdown")
struct ShutdownTests {
    @Test func sigtermSendsEveryClientClose1001AndExitsZero() throws {
        let server = try ServerProcess(["--loops", "2", "--shutdown-grace", "20"])
        var clients = [RawClient]()
        for index in 0..<1000 {
            let client = try RawClient(port: server.port)
            client.send("GET /rooms/shutdown-\(index % 10) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            clients.append(client)
        }
        for client in clients { #expect(String(decoding: client.receive(atLeast: 129, timeout: 5), as: UTF8.self).hasPrefix("HTTP/1.1 101 ")) }

        server.child.signal(SIGTERM)
        var codes = [Int: Int]()
        for client in clients {
            var received = [UInt8]()
            let deadline = Date().addingTimeInterval(10)
            while closeCode(in: received) == nil && Date() < deadline { received += client.receive(atLeast: 1, timeout: 1) }
            codes[closeCode(in: received) ?? -1, default: 0] += 1
            client.send(maskedFrame(0x8, [0x03, 0xE9]))  // answer the close handshake
        }
        #expect(codes == [1001: 1000], "close codes seen: \(codes)")
        #expect(server.child.wait(timeout: 30) == 0, "exit status 0 after the clients closed")
        #expect(server.child.exitedNormally, "exited, not killed by a signal")
    }
}
