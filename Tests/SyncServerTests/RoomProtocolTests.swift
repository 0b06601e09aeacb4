import Foundation
import Operations
@testable import SyncServer
import Testing

/// The room protocol end to end: a Python client written against Protocol/PROTOCOL.md
/// (room_checks.py) drives the real server, reading the same vectors as the unit tests.
/// The server runs in the test's process (the client is the process), except for the check
/// that reads the server's resident memory.
@Suite("Room protocol with a Python client")
struct RoomProtocolTests {
    /// Each check with the server settings it needs.
    static let checks: [(String, @Sendable (inout ServerConfiguration) -> Void)] = [
        ("rooms", { _ in }), ("sequences", { _ in }), ("compressed", { _ in }), ("invalid", { _ in }), ("ordering", { _ in }),
        ("document-limit", { _ in }), ("idle-expiry", { $0.rooms.roomIdleSeconds = 1 }), ("keys-required", { $0.rooms.requirePresenterKey = true }),
    ]

    func runCheck(_ name: String, on server: any ServerNode, pid: Int32? = nil) throws {
        let script = peersDirectory.appendingPathComponent("room_checks.py").path
        let result = try run("python3", [script, server.url, name], environment: pid.map { ["SERVER_PID": String($0)] } ?? [:], timeout: 180)
        #expect(result.status == 0, "\(name):\n\(result.output)")
        #expect(result.output.contains("ok \(name)"), "\(result.output)")
        #expect(server.isRunning)
    }

    @Test(arguments: checks.indices)
    func check(_ index: Int) throws {
        let (name, adjust) = Self.checks[index]
        let server = try InProcessNode {
            $0.loops = 2
            adjust(&$0)
        }
        try runCheck(name, on: server)
    }

    /// A follower that stops reading: the check reads the server's resident memory, so the
    /// server is a process of its own.
    @Test func slowFollower() throws {
        let server = try ServerProcess(["--loops", "2", "--scroll-rate", "0"])
        try runCheck("slow-follower", on: server, pid: server.pid)
    }
}
