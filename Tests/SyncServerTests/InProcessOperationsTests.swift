import Foundation
import ScrollModel
import SyncServer
import Testing
import Transport

/// The operations endpoints' HTTP rules and `GET /rooms` on the in-process server (issue 28.3).
/// The Prometheus text itself is checked against the real process (`OperationsEndpointTests`).
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
