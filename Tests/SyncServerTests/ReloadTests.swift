import ScrollModel
import SyncServer
import Testing
import Transport

/// What a reload (SIGHUP) changes while the server runs, in process: the admin token, the
/// origins and the connection limits take effect for the next request; settings read once
/// at start are named as needing a restart; members already in a room stay.
@Suite("Reload in process (embedded loop)")
struct ReloadTests {
    @Test func theAdminTokenOriginsAndConnectionLimitsChangeWhileMembersStay() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.adminToken = "old" }
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/r?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        func rooms(_ token: String) -> String {
            ask("GET /rooms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n", of: server, on: loop)
        }
        #expect(rooms("old").hasPrefix("HTTP/1.1 200 "))
        let pageOrigin = "Origin: https://talks.example"
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/r", headers: [pageOrigin]).status.contains(" 403 "))

        var next = server.configuration
        next.adminToken = "new"
        next.allowedOrigins = ["https://talks.example"]
        next.limits.rooms = 5  // read once at start
        let report = server.reload(next)
        #expect(Set(report.applied) == ["admin.token", "origins"], "\(report.applied)")
        #expect(report.needRestart == ["limits.rooms"])
        #expect(!report.certificateReloaded && report.certificateRefused == nil, "no TLS here")
        #expect(rooms("old").hasPrefix("HTTP/1.1 401 "), "the old token no longer opens /rooms")
        #expect(rooms("new").hasPrefix("HTTP/1.1 200 "))
        let fromThePage = try InProcessClient(server, loop: loop, path: "/rooms/r", from: "10.0.0.9", headers: [pageOrigin])
        #expect(fromThePage.upgraded, "\(fromThePage.answer)")

        next.limits.connectionsPerAddress = 2
        #expect(server.reload(next).applied == ["limits.connectionsPerAddress"])
        // The page's follower is open from 10.0.0.9 (counted though it came before the limit): one more fits, not two.
        let second = try InProcessClient(server, loop: loop, path: "/rooms/r", from: "10.0.0.9")
        #expect(second.upgraded)
        let third = try InProcessClient(server, loop: loop, path: "/rooms/r", from: "10.0.0.9")
        #expect(third.status.contains(" 429 "), "\(third.answer)")
        presenter.send(#"{"type":"scroll","offset":7}"#)
        #expect(fromThePage.wait { $0.contains(#""offset":7,"#) }, "members already in the room carry on")
    }
}
