import Foundation
import Testing

/// Bad input never takes the server down or leaks: what needs a process (its descriptors and
/// memory). The answers themselves are `InProcessBadInputTests`.
@Suite("Bad input")
struct BadInputTests {
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
