import HTTP1
import Foundation
import ScrollModel
import Synchronization
import Testing
import Transport
import WebSocketCore
@testable import SyncClient

/// A server that answers every connection the same scripted way, counting connections.
final class ScriptedServer: @unchecked Sendable {
    enum Answer: Sendable {
        /// 101, then at once this close frame (and the socket closed).
        case upgradeThenClose(code: UInt16, reason: String, before: String?)
        /// An HTTP refusal.
        case refuse(status: Int, retryAfter: Int?)
        /// These bytes, whatever they are.
        case raw(String)
    }

    let port: Int
    let connections = Atomic<Int>(0)
    private let listener: Int32

    /// - Parameter drip: send the answer one byte at a time (a millisecond apart), so that the
    ///   client reads its head and frames in pieces.
    init(_ answer: Answer, drip: Bool = false) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 64) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound else { throw ScriptedServerError() }
        port = Int(UInt16(bigEndian: address.sin_port))
        let server = UncheckedBox(self)
        Thread.detachNewThread { server.value.serve(answer, drip: drip) }
    }

    deinit { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }

    private func serve(_ answer: Answer, drip: Bool) {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            connections.add(1, ordering: .relaxed)
            var parser = HTTPRequestParser()
            var buffer = [UInt8](repeating: 0, count: 16384)
            var request: HTTPRequest?
            while request == nil {
                let count = recv(fd, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                if case .complete(let parsed, _) = buffer.withUnsafeBytes({ parser.parse(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) { request = parsed }
            }
            var out = [UInt8]()
            switch answer {
            case .upgradeThenClose(let code, let reason, let before):
                if let request, case .success(let upgrade) = ServerHandshake.validate(request) {
                    out = ServerHandshake.response(for: upgrade, subprotocol: upgrade.protocols.first, extensions: nil).bytes
                    if let before { out += FrameEncoder.frame(opcode: .text, payload: Array(before.utf8)).array }
                    out += FrameEncoder.frame(opcode: .close, payload: FrameEncoder.closePayload(code: CloseCode(code), reason: reason)).array
                }
            case .refuse(let status, let retryAfter):
                out = HTTPResponse.error(status, "refused by the script", headers: retryAfter.map { [("Retry-After", String($0))] } ?? []).bytes
            case .raw(let text):
                out = Array(text.utf8)
            }
            if drip {
                for byte in out {
                    var one = byte
                    guard send(fd, &one, 1, Int32(MSG_NOSIGNAL)) == 1 else { break }
                    usleep(1000)
                }
            } else {
                _ = out.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            // Close as a server does: end the sending side, read until the client closes (its
            // close reply), then close. Closing with its reply unread would send a reset, and a
            // reset makes the client's TCP drop answer bytes it has not read yet.
            shutdown(fd, Int32(SHUT_WR))
            var wait = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            while recv(fd, &buffer, buffer.count, 0) > 0 {}
            close(fd)
        }
    }
}

struct ScriptedServerError: Error {}

struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// What a client heard, safe to read from the test's thread.
final class Heard: @unchecked Sendable {
    private let statuses = Mutex<[RoomClient.Status]>([])

    func record(_ event: RoomClient.Event) {
        if case .status(let status) = event { statuses.withLock { $0.append(status) } }
    }

    var all: [RoomClient.Status] { statuses.withLock { $0 } }

    var waits: [Double] {
        all.compactMap { if case .waiting(let delay, _) = $0 { delay } else { nil } }
    }

    /// Waits up to `timeout` seconds for `condition` over what was heard.
    func wait(timeout: Double = 15, until condition: ([RoomClient.Status]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(all) { return true }
            usleep(10_000)
        }
        return condition(all)
    }
}

/// Clients never hammer a server (issue 17.11).
@Suite("Reconnecting", .serialized)
struct ReconnectTests {
    static func client(port: Int, heard: Heard) throws -> (RoomClient, EventLoopGroup) {
        let group = try EventLoopGroup(count: 1)
        group.start()
        let url = try #require(WebSocketURL("ws://127.0.0.1:\(port)/rooms/r?role=presenter&key=wrong"))
        let client = try RoomClient(urls: [url], loop: group.loops[0]) { heard.record($0) }
        client.start()
        return (client, group)
    }

    /// A connection closed right after its handshake is a failed attempt: the delay keeps
    /// growing instead of starting over at 0.25 s.
    @Test func theBackoffGrowsWhenTheServerClosesRightAfterTheHandshake() throws {
        let server = try ScriptedServer(.upgradeThenClose(code: 1011, reason: "broken", before: nil))
        let heard = Heard()
        let (client, group) = try Self.client(port: server.port, heard: heard)
        #expect(heard.wait { _ in heard.waits.count >= 4 }, "\(heard.all)")
        client.stop()
        let waits = heard.waits
        // Attempt n waits 0.25 * 2^n s scaled by 0.5…1: the fourth at least 1 s, the first at most 0.25 s.
        #expect(waits.count >= 4 && waits[3] >= 1.0 && waits[0] <= 0.25, "\(waits)")
        #expect(zip(waits, waits.dropFirst()).allSatisfy { $1 > $0 / 2 }, "\(waits)")
        group.shutdown()
    }

    /// Close 1008 (the room refused the session, e.g. a wrong key) stops the client with the
    /// server's reason: one connection, no retry.
    @Test func aPolicyCloseStopsTheClientWithTheReason() throws {
        let server = try ScriptedServer(.upgradeThenClose(code: 1008, reason: "wrong or missing presenter key for room r",
                                                         before: #"{"type":"error","code":"unauthorized","message":"wrong or missing presenter key for room r"}"#))
        let heard = Heard()
        let (client, group) = try Self.client(port: server.port, heard: heard)
        #expect(heard.wait { $0.contains(.refused(reason: "wrong or missing presenter key for room r")) }, "\(heard.all)")
        #expect(heard.waits.isEmpty, "no retry was scheduled: \(heard.all)")
        #expect(server.connections.load(ordering: .relaxed) == 1)
        client.stop()
        group.shutdown()
    }

    /// A refusal's body is read only as far as a sane Content-Length says: a negative,
    /// malformed or oversized one cannot crash the client (a negative one did).
    @Test(arguments: ["-5", "x", "99999999999999999999999", "4"])
    func aHostileRefusalLengthIsReadSafely(_ length: String) throws {
        let server = try ScriptedServer(.raw("HTTP/1.1 403 Forbidden\r\nContent-Length: \(length)\r\n\r\nnope, not you"))
        let heard = Heard()
        let (client, group) = try Self.client(port: server.port, heard: heard)
        let said = length == "4" ? "HTTP 403 Forbidden: nope" : "HTTP 403 Forbidden"
        #expect(heard.wait { $0.contains { if case .refused(let reason) = $0 { reason.hasSuffix(said) } else { false } } }, "\(heard.all)")
        client.stop()
        group.shutdown()
    }

    /// An answer that arrives a byte at a time (the head's blank line split across reads, then
    /// the frames) is read the same: the client sees the room's refusal and stops.
    @Test func anAnswerDrippedAByteAtATimeIsReadWhole() throws {
        let server = try ScriptedServer(.upgradeThenClose(code: 1008, reason: "wrong key",
                                                         before: #"{"type":"error","code":"unauthorized","message":"wrong key"}"#), drip: true)
        let heard = Heard()
        let (client, group) = try Self.client(port: server.port, heard: heard)
        #expect(heard.wait { $0.contains(.refused(reason: "wrong key")) }, "\(heard.all)")
        #expect(heard.waits.isEmpty, "the first answer was read whole, no retry: \(heard.all)")
        #expect(server.connections.load(ordering: .relaxed) == 1)
        client.stop()
        group.shutdown()
    }

    /// Answers that retrying cannot change stop the client with the reason after one
    /// connection: a 101 that breaks RFC 6455 (a wrong Sec-WebSocket-Accept), a redirect
    /// (WebSocket clients do not follow them), a 4xx.
    @Test(arguments: [
        ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: d3JvbmcgYW5zd2VyIGhlcmU=\r\n\r\n",
         "not a WebSocket server this client can talk to (wrong Sec-WebSocket-Accept)"),
        ("HTTP/1.1 301 Moved Permanently\r\nLocation: wss://talks.example/rooms/r\r\nContent-Length: 0\r\n\r\n",
         "the server redirects to wss://talks.example/rooms/r"),
        ("HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\n\r\nno such path", "HTTP 404 Not Found: no such path"),
    ])
    func answersThatCannotHealStopTheClient(_ answer: String, _ said: String) throws {
        let server = try ScriptedServer(.raw(answer))
        let heard = Heard()
        let (client, group) = try Self.client(port: server.port, heard: heard)
        #expect(heard.wait { $0.contains { if case .refused(let reason) = $0 { reason.contains(said) } else { false } } }, "\(heard.all)")
        #expect(heard.waits.isEmpty, "no retry: \(heard.all)")
        #expect(server.connections.load(ordering: .relaxed) == 1)
        client.stop()
        group.shutdown()
    }

    /// A host name that does not exist says so and stops; it is not "disconnected, reconnecting".
    @Test func aHostNameThatDoesNotResolveSaysSoAndStops() throws {
        let group = try EventLoopGroup(count: 1)
        group.start()
        let heard = Heard()
        let url = try #require(WebSocketURL("ws://no-such-host.invalid:8080/rooms/r"))
        let client = try RoomClient(urls: [url], loop: group.loops[0]) { heard.record($0) }
        client.start()
        #expect(heard.wait { $0.contains(.refused(reason: "host no-such-host.invalid does not resolve: no such name (check the URL)")) }, "\(heard.all)")
        #expect(heard.waits.isEmpty, "\(heard.all)")
        client.stop()
        group.shutdown()
    }

    /// 429 with Retry-After: the client waits at least that long.
    @Test func retryAfterIsHonoured() throws {
        let server = try ScriptedServer(.refuse(status: 429, retryAfter: 3))
        let heard = Heard()
        let (client, group) = try Self.client(port: server.port, heard: heard)
        #expect(heard.wait { _ in !heard.waits.isEmpty }, "\(heard.all)")
        #expect(heard.waits.first.map { $0 >= 3 } == true, "\(heard.waits)")
        client.stop()
        group.shutdown()
    }
}
