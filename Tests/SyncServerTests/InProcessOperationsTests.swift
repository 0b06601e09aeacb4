import Foundation
import Operations
import ScrollModel
import SyncServer
import Testing
import Transport

/// The operations endpoints' HTTP rules and `GET /rooms` on the in-process server (issue 28.3).
/// The Prometheus text is parsed as a scraper would (`OperationsEndpointTests.parsePrometheus`).
@Suite("Operations endpoints in process (embedded loop)")
struct InProcessOperationsTests {
    /// HEAD is GET without the body (load balancers probe health that way); other methods
    /// get 405 with Allow; HTTP/1.1 without Host is a bad request, HTTP/1.0 needs none;
    /// content is refused, and a length that could be read two ways (the request-smuggling
    /// pair) before anything else (RFC 9112 §6).
    @Test func healthAnswersHeadAndRefusesWhatHTTPForbids() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        func ask(_ request: String) -> String { SyncServerTests.ask(request, of: server, on: loop) }
        let head = ask("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let get = ask("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200 "), "\(head)")
        let getLength = get.split(separator: "\r\n").first { $0.hasPrefix("Content-Length:") }
        #expect(getLength != nil && head.contains(getLength!), "HEAD gives GET's length: \(head)")
        #expect(head.hasSuffix("\r\n\r\n"), "and no body: \(head)")
        let post = ask("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(post.hasPrefix("HTTP/1.1 405 ") && post.contains("Allow: GET, HEAD"), "\(post)")
        let hostless = ask("GET /healthz HTTP/1.1\r\n\r\n")
        #expect(hostless.hasPrefix("HTTP/1.1 400 ") && hostless.contains("missing Host header"), "\(hostless)")
        #expect(ask("GET /healthz HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        let withBody = ask("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        #expect(withBody.hasPrefix("HTTP/1.1 400 ") && withBody.contains("/healthz takes no request content"), "\(withBody)")
        let smuggled = ask("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(smuggled.hasPrefix("HTTP/1.1 400 ") && smuggled.contains("both Transfer-Encoding and Content-Length"), "\(smuggled)")
        let upgrade = "GET /rooms/body HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        let upgradeWithBody = ask(upgrade + "Content-Length: 2\r\n\r\nhi")
        #expect(upgradeWithBody.hasPrefix("HTTP/1.1 400 ") && upgradeWithBody.contains("a WebSocket upgrade carries no content"), "\(upgradeWithBody)")
        #expect(ask(upgrade + "Content-Length: 0\r\n\r\n").hasPrefix("HTTP/1.1 101 "), "an empty length is no content")
        // A WebSocket upgrade is never an HTTP endpoint's (not even where one lives); another
        // protocol's upgrade offer (curl's h2c) does not stop a plain answer.
        let websocketToHealth = ask(upgrade.replacingOccurrences(of: "/rooms/body", with: "/healthz") + "\r\n")
        #expect(websocketToHealth.hasPrefix("HTTP/1.1 404 ") && websocketToHealth.contains("no endpoint at /healthz"), "\(websocketToHealth)")
        let h2c = ask("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n")
        #expect(h2c.hasPrefix("HTTP/1.1 200 "), "\(h2c)")
        let viewer = ask("GET /rooms/body HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\n\r\n")
        #expect(viewer.hasPrefix("HTTP/1.1 200 ") && viewer.contains("text/html"), "a browser's GET of a room is its page: \(viewer.prefix(200))")
    }

    @Test func roomsListsMembersAndSeqBehindTheAdminToken() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.adminToken = "let-me-in" }
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/listed?role=presenter&key=k")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/listed")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        presenter.send(#"{"type":"scroll","offset":3}"#)
        presenter.send(#"{"type":"scroll","offset":4}"#)
        #expect(follower.wait { $0.contains(#""offset":4,"#) })
        func rooms(_ authorization: String?) -> String {
            ask("GET /rooms HTTP/1.1\r\nHost: x\r\n" + (authorization.map { "Authorization: \($0)\r\n" } ?? "") + "\r\n", of: server, on: loop)
        }
        #expect(rooms(nil).hasPrefix("HTTP/1.1 401 "))
        #expect(rooms("Bearer nope").hasPrefix("HTTP/1.1 401 "))
        let answer = rooms("Bearer let-me-in")
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        let body = try JSON.parse(String(answer.split(separator: "\r\n\r\n", maxSplits: 1).last ?? ""))
        guard case .array(let list)? = body["rooms"] else { Issue.record("no rooms in \(answer)"); return }
        let room = list.first { $0["name"]?.string == "listed" }
        #expect(room?["presenters"]?.double == 1 && room?["followers"]?.double == 1, "\(body)")
        #expect(room?["seq"]?.double == 2 && room?["driving"]?.bool == true)
    }
}

extension InProcessOperationsTests {
    static func metrics(_ server: Server, _ loop: EventLoop) throws -> [String: Double] {
        let answer = ask("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", of: server, on: loop)
        return try OperationsEndpointTests().parsePrometheus(String(answer.split(separator: "\r\n\r\n", maxSplits: 1).last ?? ""))
    }

    /// /metrics parses as Prometheus text and moves with traffic: connections, rooms, members,
    /// messages, deliveries, handshakes and their failures, close codes.
    @Test func metricsParseAndMoveWithTraffic() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let before = try Self.metrics(server, loop)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/m?role=presenter")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/m")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        for offset in 1...10 { presenter.send(#"{"type":"scroll","offset":\#(offset)}"#) }
        #expect(follower.wait { $0.contains(#""offset":10,"#) })
        _ = try InProcessClient(server, loop: loop, path: "/nowhere")
        let after = try Self.metrics(server, loop)
        #expect(after[#"scrollsync_connections{state="open"}"#] == 2)
        #expect(after[#"scrollsync_rooms{state="active"}"#] == 1)
        #expect(after[#"scrollsync_room_members{role="follower"}"#] == 1)
        #expect((after["scrollsync_messages_in_total"] ?? 0) - (before["scrollsync_messages_in_total"] ?? 0) == 10)
        #expect((after["scrollsync_state_deliveries_total"] ?? 0) - (before["scrollsync_state_deliveries_total"] ?? 0) >= 2,
                "the newest state to the follower and the presenter (older ones may be conflated)")
        #expect((after["scrollsync_bytes_out_total"] ?? 0) > (before["scrollsync_bytes_out_total"] ?? 0))
        #expect(after["scrollsync_handshakes_total"] == 2)
        #expect(after[#"scrollsync_handshake_failures_total{status="404"}"#] == 1)
        #expect((after["scrollsync_broadcast_latency_seconds_count"] ?? 0) > 0)
        #expect(after[#"scrollsync_event_loop_lag_seconds{loop="0"}"#] != nil)
        presenter.connection.write(maskedFrame(0x8, [0x03, 0xE8]))
        #expect(loop.advance(until: { presenter.connection.sendingShutDown }), "the server answers the close and shuts down its side")
        presenter.connection.hangUp()
        #expect(try Self.metrics(server, loop)[#"scrollsync_close_codes_total{code="1000"}"#] == 1)
    }

    /// Refusals are logged with their status and reason, the path without its query; a key
    /// never reaches the log.
    @Test func refusalsAreLoggedWithTheirReasonAndNeverAKey() throws {
        let log = CapturedLog()
        let (server, loop) = try InProcessStoreTests.server(directory: nil, log: log) {
            $0.rooms.requirePresenterKey = true
            $0.allowedOrigins = ["https://ok.example"]
        }
        defer { server.shutdown() }
        _ = try InProcessClient(server, loop: loop, path: "/rooms/logged?role=presenter&key=hunter2", headers: ["Origin: https://bad.example"])
        _ = try InProcessClient(server, loop: loop, path: "/rooms/bad%20name?key=hunter2")
        let output = log.text
        #expect(output.contains("status=403") && output.contains("origin https://bad.example is not allowed"), "\(output)")
        #expect(output.contains("status=400") && output.contains("room names are 1 to 64 characters"), "\(output)")
        #expect(output.contains("path=/rooms/logged "), "the path is logged without its query: \(output)")
        #expect(!output.contains("hunter2"), "a key never reaches the log: \(output)")
    }

    /// One server per data directory: a second is refused, naming the first's process.
    @Test func aSecondServerOnTheSameDirectoryIsRefused() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (first, _) = try InProcessStoreTests.server(directory: directory)
        defer { first.shutdown() }
        #expect {
            _ = try InProcessStoreTests.server(directory: directory)
        } throws: { error in
            "\(error)".contains("in use by another scrollsync server (pid \(getpid()))")
        }
    }
}
