import Foundation
@testable import Hub
import Operations
import ScrollModel
import SyncServer
import Testing
import Transport
import WebSocketCore

/// A room member over an in-process connection (issue 19's harness): the real server's
/// peer, router, rooms and members on an embedded loop the test steps; no socket, no child
/// process, no sleep. Its clock moves only when the test says. With `tls` it speaks wss: a
/// TLS client channel on the same loop, linked to the server's end.
final class InProcessClient {
    /// The server's end of the connection (its `window` throttles what the server sends).
    let connection: EmbeddedConnection
    let loop: EventLoop
    /// Over wss, the client whose plaintext this reads and writes; nil over ws.
    private(set) var secure: TLSClientEnd?
    private let codec = WebSocketConnection(role: .client)
    private var head = [UInt8]()
    private(set) var status = ""
    /// The answer's head (status line and fields), and for a refusal its body too.
    private(set) var answer = ""
    private(set) var messages = [String]()
    private(set) var closeCode: UInt16?

    var upgraded: Bool { status.hasPrefix("HTTP/1.1 101 ") }

    init(_ server: Server, loop: EventLoop, path: String, from address: String = "127.0.0.1", headers: [String] = [], host: String = "test",
         tls: TLSContext? = nil) throws {
        self.loop = loop
        connection = server.connectEmbedded(from: address)
        let request = Array(("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + headers.map { $0 + "\r\n" }.joined()
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: scrollsync.v1\r\n\r\n").utf8)
        if let tls {
            secure = try TLSClientEnd(linkedTo: connection, on: loop, tls: tls, first: request)
        } else {
            connection.write(request)
        }
        guard loop.advance(until: { self.pump(); return !self.status.isEmpty || self.secure?.closed == true }), !status.isEmpty else {
            throw Failure("no answer to the upgrade of \(path)" + (secure?.failure.map { ": \($0)" } ?? ""))
        }
    }

    /// Decodes what the server sent since the last call.
    func pump() {
        var bytes = secure?.read() ?? connection.read()
        if status.isEmpty {
            head += bytes
            guard let end = head.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            answer = String(decoding: head[..<end.lowerBound], as: UTF8.self)
            status = answer.components(separatedBy: "\r\n").first ?? ""
            bytes = Array(head[end.upperBound...])
        }
        guard status.contains(" 101 ") else {
            answer += String(decoding: bytes, as: UTF8.self)  // a refusal's body
            return
        }
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeMutableBytes { buffer in
            codec.receive(buffer) { event in
                switch event {
                case .text(let text): messages.append(String(decoding: text, as: UTF8.self))
                case .closed(let code, _): closeCode = code.rawValue
                case .failed(let error): closeCode = error.closeCode.rawValue
                default: break
                }
            }
        }
    }

    func send(_ json: String) {
        _ = codec.send(text: json)
        codec.drainOutbound { write($0.array) }
    }

    private func write(_ bytes: [UInt8]) {
        if let secure { secure.write(bytes) } else { connection.write(bytes) }
    }

    /// Sends several messages in one write: the server reads them at one loop time.
    func send(all jsons: [String]) {
        for json in jsons { _ = codec.send(text: json) }
        var bytes = [UInt8]()
        codec.drainOutbound { bytes += $0.array }
        write(bytes)
    }

    /// Steps the loop until the refusal's answer (head and body) contains `text`.
    @discardableResult
    func waitForAnswer(containing text: String) -> Bool {
        loop.advance(until: { pump(); return answer.contains(text) })
    }

    /// Steps the loop until a message satisfies `condition`.
    @discardableResult
    func wait(for condition: (String) -> Bool) -> Bool {
        loop.advance(until: { pump(); return messages.contains(where: condition) })
    }

    var states: [JSON] { messages.compactMap { try? JSON.parse($0) }.filter { $0["type"]?.string == "state" } }
}

/// `request` to the in-process server on a connection of its own: what came back, and whether
/// the server ended the connection. `more` goes once the answer's head is in (frames after an
/// upgrade); without it an upgrade's answer ends at its head.
func exchange(_ request: [UInt8], with server: Server, on loop: EventLoop, then more: [UInt8]? = nil) -> (answer: [UInt8], closed: Bool) {
    let connection = server.connectEmbedded()
    connection.write(request)
    var answer = [UInt8]()
    func headIsIn() -> Bool { answer.firstRange(of: Array("\r\n\r\n".utf8)) != nil }
    if let more {
        loop.advance(until: { answer += connection.read(); return headIsIn() })
        connection.write(more)
    }
    loop.advance(until: {
        answer += connection.read()
        return connection.sendingShutDown || connection.closed || (more == nil && answer.starts(with: Array("HTTP/1.1 101 ".utf8)) && headIsIn())
    })
    return (answer, connection.sendingShutDown || connection.closed)
}

/// `exchange` as text, for requests and answers that are.
func ask(_ request: String, of server: Server, on loop: EventLoop) -> String {
    String(decoding: exchange(Array(request.utf8), with: server, on: loop).answer, as: UTF8.self)
}

@Suite("Rooms in process (embedded loop)")
struct InProcessRoomTests {
    static func server(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws -> (Server, EventLoop) {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = nil
        adjust(&configuration)
        let loop = try EventLoop.embedded()
        return (try Server(configuration: configuration, embedded: loop), loop)
    }

    @Test func aLateJoinerGetsTheStateAndFollowersGetEveryChange() throws {
        let (server, loop) = try Self.server()
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/r?role=presenter&key=k&name=Ann")
        #expect(presenter.status.contains(" 101 "), "\(presenter.status)")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/r")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) && $0.contains(#""driverName":"Ann""#) }, "\(follower.messages)")
        for offset in [10, 20, 30] { presenter.send(#"{"type":"scroll","offset":\#(offset),"viewport":10,"content":100}"#) }
        #expect(follower.wait { $0.contains(#""offset":30,"#) }, "\(follower.messages)")
        let seqs = follower.states.compactMap { $0["seq"]?.double }
        #expect(!seqs.isEmpty && zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "\(seqs)")
        let late = try InProcessClient(server, loop: loop, path: "/rooms/r")
        #expect(late.wait { $0.contains(#""type":"welcome""#) && $0.contains(#""offset":30,"#) }, "\(late.messages)")
    }

    /// A follower whose socket takes nothing holds at most the newest state, and gets it
    /// when it reads again: conflation, stepped deterministically; over wss too (libssl then
    /// holds at most the part of one record the connection did not take).
    @Test(arguments: [false, true]) func aFollowerThatDoesNotReadEndsOnTheNewestState(overTLS: Bool) throws {
        let (server, loop) = try overTLS ? InProcessTLSTests.server() : Self.server()
        defer { server.shutdown() }
        let tls = overTLS ? try InProcessTLSTests.trusting() : nil
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/slow?role=presenter&key=k", tls: tls)
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/slow", tls: tls)
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        follower.connection.window = 0  // reads nothing from now on
        let before = follower.messages.count
        for offset in 1...500 {
            presenter.send(#"{"type":"scroll","offset":\#(offset),"viewport":10,"content":1000}"#)
            loop.advance(by: 20_000_000)  // 50 a second, under the rate limit
        }
        #expect(presenter.wait { $0.contains(#""offset":500,"#) })
        follower.pump()
        #expect(follower.connection.read().isEmpty && follower.messages.count == before, "nothing got through a closed window")
        follower.connection.acceptMore(nil)
        #expect(follower.wait { $0.contains(#""offset":500,"#) })
        let states = follower.states
        #expect(states.count < 10, "a backlog was kept: \(states.count) states")
        #expect(states.last?["offset"]?.double == 500)
    }

    /// A room only followers joined goes when they leave; one a presenter joined but never
    /// drove, after `rooms.undrivenIdleSeconds` of the loop's clock, which moves only when
    /// the test moves it.
    @Test func timeMovesOnlyWhenTheTestSays() throws {
        let (server, loop) = try Self.server { $0.rooms.undrivenIdleSeconds = 60 }
        defer { server.shutdown() }
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/unclaimed")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        #expect(server.hub.summaries().contains { $0.name == "unclaimed" })
        follower.connection.hangUp()
        loop.advance()
        #expect(!server.hub.summaries().contains { $0.name == "unclaimed" }, "an unclaimed room goes with its last follower")

        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/quiet?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        presenter.connection.hangUp()
        loop.advance(by: 30_000_000_000)
        #expect(server.hub.summaries().contains { $0.name == "quiet" }, "kept at 30 s")
        for _ in 0..<40 { loop.advance(by: 1_000_000_000) }
        #expect(!server.hub.summaries().contains { $0.name == "quiet" }, "gone after 70 s")
    }

    // Moved from HostileClientTests (issue 17's reproductions), now without sockets.

    /// A `%` that is not followed by two hex digits, or bytes that are not UTF-8, are a
    /// 400: never repaired into another value (`a%zzb` is not the key `ab`).
    @Test(arguments: ["key=a%zzb", "role=presenter&key=%ff%ff", "name=%", "name=ok&key=%4", "ro%zzle=presenter"])
    func malformedPercentEncodingIsRefused(_ query: String) throws {
        let (server, loop) = try Self.server()
        defer { server.shutdown() }
        let client = try InProcessClient(server, loop: loop, path: "/rooms/enc?\(query)")
        #expect(client.status.hasPrefix("HTTP/1.1 400 "), "\(client.answer)")
        loop.advance(until: { client.pump(); return client.connection.sendingShutDown || client.connection.closed })
        #expect(client.answer.contains("percent-encoding"), "the body says what was wrong: \(client.answer)")
    }

    /// Issue 17.2: 10,050 follower upgrades to new rooms from one address fill no more than
    /// `limits.unclaimedRoomsPerAddress` (50); the rest get 429 with Retry-After; another
    /// address is not locked out; the flood's rooms go with their followers.
    @Test func oneAddressCannotFillTheRoomTable() throws {
        let (server, loop) = try Self.server { $0.limits.roomCreationsPerMinute = 0 }
        defer { server.shutdown() }
        var open = [InProcessClient]()
        var refused = 0
        var retryAfter = true
        for index in 0..<10_050 {
            let client = try InProcessClient(server, loop: loop, path: "/rooms/flood\(index)")
            if client.upgraded {
                open.append(client)
            } else {
                #expect(client.status.hasPrefix("HTTP/1.1 429 "), "\(client.answer)")
                retryAfter = retryAfter && client.answer.contains("Retry-After: ")
                refused += 1
                client.connection.hangUp()
            }
        }
        #expect(open.count == 50, "the default unclaimed rooms per address")
        #expect(refused == 10_000)
        #expect(retryAfter)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&key=k", from: "127.0.0.2")
        #expect(presenter.upgraded, "a presenter elsewhere is not locked out: \(presenter.answer)")
        for client in open { client.connection.hangUp() }
        loop.advance()
        let names = server.hub.summaries().map(\.name)
        #expect(!names.contains { $0.hasPrefix("flood") } && names.contains("talk"), "\(names.prefix(5))")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/after-the-flood").upgraded, "the address may create rooms again")
    }

    /// Room creation is rate-limited per address (presenters too), 429 with Retry-After.
    @Test func roomCreationIsRateLimitedPerAddress() throws {
        let (server, loop) = try Self.server { $0.limits.roomCreationsPerMinute = 1 }
        defer { server.shutdown() }
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/rate0?role=presenter").upgraded)
        let refused = try InProcessClient(server, loop: loop, path: "/rooms/rate1?role=presenter")
        #expect(refused.status.hasPrefix("HTTP/1.1 429 ") && refused.answer.contains("Retry-After: "), "\(refused.answer)")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/rate-other?role=presenter", from: "127.0.0.3").upgraded)
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/rate0").upgraded, "joining a room that exists is not a creation")
        // A minute later (of the loop's clock) the address may create again.
        loop.advance(by: 61_000_000_000)
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/rate2?role=presenter").upgraded)
    }

    /// A room a presenter opened but never drove is forgotten after rooms.undrivenIdleSeconds;
    /// one that was driven keeps rooms.idleSeconds.
    @Test func roomsNeverDrivenExpireQuickly() throws {
        let (server, loop) = try Self.server { $0.rooms.undrivenIdleSeconds = 1 }
        defer { server.shutdown() }
        let idle = try InProcessClient(server, loop: loop, path: "/rooms/undriven?role=presenter&key=k")
        let driver = try InProcessClient(server, loop: loop, path: "/rooms/driven?role=presenter&key=k")
        #expect(idle.wait { $0.contains(#""type":"welcome""#) } && driver.wait { $0.contains(#""type":"welcome""#) })
        driver.send(#"{"type":"scroll","offset":3}"#)
        #expect(driver.wait { $0.contains(#""type":"state""#) })
        idle.connection.hangUp()
        driver.connection.hangUp()
        for _ in 0..<3 { loop.advance(by: 1_000_000_000) }
        let names = server.hub.summaries().map(\.name)
        #expect(!names.contains("undriven") && names.contains("driven"), "\(names)")
    }

    /// Issue 21: a browser visit gets the viewer page under a strict CSP; the room's document
    /// as HTML made from the block model; a plain GET without `Accept: text/html` stays a 426.
    @Test func aBrowserVisitGetsTheViewerPage() throws {
        let (server, loop) = try Self.server()
        defer { server.shutdown() }
        func get(_ path: String, accept: String? = nil) -> String {
            ask("GET \(path) HTTP/1.1\r\nHost: test\r\n\(accept.map { "Accept: \($0)\r\n" } ?? "")\r\n", of: server, on: loop)
        }
        let page = get("/rooms/talk", accept: "text/html,application/xhtml+xml")
        #expect(page.hasPrefix("HTTP/1.1 200 "), "\(page.prefix(200))")
        #expect(page.contains("Content-Security-Policy: default-src 'self'"))
        #expect(page.contains("<script type=\"module\" src=\"/viewer.js\"></script>") && page.contains("data-room=\"talk\""))
        #expect(get("/rooms/talk").hasPrefix("HTTP/1.1 426 ") && get("/rooms/talk").contains("viewer page"), "a plain GET is told to upgrade, and about the page")
        // A browser asking for a name no room can have gets a page saying why (issue 27.11).
        let bad = get("/rooms/bad%20%3Cb%3Ename", accept: "text/html")
        #expect(bad.hasPrefix("HTTP/1.1 400 Bad Request\r\n") && bad.contains("Content-Type: text/html"), "the reason goes with the status: \(bad.prefix(200))")
        #expect(bad.contains("“bad &lt;b&gt;name” is not a room name") && !bad.contains("<b>"), "the name is shown, escaped: \(bad)")
        let missing = get("/rooms/talk/document")
        #expect(missing.hasPrefix("HTTP/1.1 401 "), "a room that is not there answers as a private one (issue 44)")
        for answer in [missing, page, bad, get("/healthz")] {
            #expect(answer.components(separatedBy: "Connection: close\r\n").count == 2, "one Connection field: \(answer.prefix(300))")
        }
        #expect(get("/viewer.js").contains("Content-Type: text/javascript"))

        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        presenter.send(##"{"type":"document","name":"t.md","format":"markdown","text":"# Hi <b>there</b>\n\ntext"}"##)
        #expect(presenter.wait { $0.contains(#""type":"document""#) })
        let document = get("/rooms/talk/document")
        #expect(document.contains("<h1 id=\"hi-bthereb\" class=\"block\"") && document.contains("Hi &lt;b&gt;there&lt;/b&gt;"), "\(document)")
        #expect(document.contains("X-Document-Fingerprint: "))
    }
}

extension InProcessRoomTests {
    /// Presence goes out a chunk of members per loop turn (issue 30: 6,000 sends in one turn
    /// held a join storm's handshakes for 57 ms); every member still ends on the newest count.
    @Test func presenceReachesEveryMemberOfALargeRoomInChunksAndEndsOnTheNewestCount() throws {
        let (server, loop) = try Self.server { $0.limits.connectionsPerAddress = 0 }
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/big?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        let followers = try (0..<600).map { try InProcessClient(server, loop: loop, path: "/rooms/big", from: "10.9.\($0 / 250).\($0 % 250)") }
        #expect(followers.allSatisfy { $0.upgraded })
        // Past every throttle interval (a room of 600 sends presence at most every 0.6 s).
        for _ in 0..<4 { loop.advance(by: 1_000_000_000) }
        let settled = loop.advance(until: {
            followers.allSatisfy { follower in
                follower.pump()
                return follower.messages.last { $0.contains(#""type":"presence""#) }?.contains(#""followers":600"#) == true
            }
        })
        #expect(settled, "every follower ends on 600 followers")
        #expect(presenter.wait { $0.contains(#""type":"presence""#) && $0.contains(#""followers":600"#) })
    }
}
