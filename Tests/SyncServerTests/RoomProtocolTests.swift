import Foundation
import Testing

/// The room protocol end to end: a Python client written against Protocol/PROTOCOL.md
/// (room_checks.py) drives the real server, reading the same vectors as the unit tests.
@Suite("Room protocol with a Python client")
struct RoomProtocolTests {
    /// Each check with the server options it needs.
    static let checks: [(String, [String])] = [
        ("rooms", []), ("sequences", []), ("compressed", []), ("invalid", []), ("ordering", []), ("slow-follower", ["--scroll-rate", "0"]),
        ("document-limit", []), ("idle-expiry", ["--room-idle", "1"]), ("keys-required", ["--require-keys"]),
    ]

    @Test(arguments: checks.indices)
    func check(_ index: Int) throws {
        let (name, options) = Self.checks[index]
        let server = try ServerProcess(["--loops", "2"] + options)
        let script = peersDirectory.appendingPathComponent("room_checks.py").path
        let result = try run("python3", [script, server.url, name], environment: ["SERVER_PID": String(server.pid)], timeout: 180)
        #expect(result.status == 0, "\(name):\n\(result.output)")
        #expect(result.output.contains("ok \(name)"), "\(result.output)")
        #expect(server.isRunning)
    }

    @Test func refusedRoomRequestsSayWhy() throws {
        let server = try ServerProcess()
        for (target, status) in [("/rooms/", "400"), ("/rooms/has%20space", "400"), ("/rooms/ok?role=admin", "400"), ("/roomz/x", "404")] {
            let client = try RawClient(port: server.port)
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            let answer = String(decoding: client.receiveUntilClosed(timeout: 5).bytes, as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(target): \(answer)")
        }
    }
}
