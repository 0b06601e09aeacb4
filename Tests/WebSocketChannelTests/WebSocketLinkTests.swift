import Bytes
import Testing
import Transport
import WebSocketChannel
import WebSocketCore

/// A link as its owner drives it (the server's `WebSocketPeer`, the client's `WebSocketClient`):
/// reads, the loop's tick and the end, with the idle and message limits a test gives it.
private final class TestLink: WebSocketLink, ChannelHandler {
    let idleSeconds: Int

    init(channel: Channel, counters: LinkCounters, idleSeconds: Int) {
        self.idleSeconds = idleSeconds
        super.init(channel: channel, counters: counters, phase: .done)
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) { _ = read(bytes, budget: nil) }
    func channelTick(_ channel: Channel, now: UInt64) { _ = tick(now: now, idleSeconds: idleSeconds, messageTimeoutSeconds: 0) }
    func channelClosed(_ channel: Channel) { ended {} }
}

/// What a session heard, in order.
private final class Recorder: WebSocketSession {
    var heard: [String] = []
    /// Sent back on every text message (nil: nothing).
    var echo = false
    /// Sent as the session opens (a welcome).
    var greeting: String?

    func opened(_ peer: WebSocketLink) {
        heard.append("opened")
        if let greeting { peer.send(text: greeting) }
    }

    func received(text: UnsafeRawBufferPointer, from peer: WebSocketLink) {
        heard.append("text " + String(decoding: text, as: UTF8.self))
        if echo { peer.send(text: Array(text)) }
    }

    func received(pong: UnsafeRawBufferPointer, from peer: WebSocketLink) { heard.append("pong \(pong.count)") }
    func received(close code: CloseCode, reason: String, from peer: WebSocketLink) { heard.append("close \(code.rawValue) \(reason)") }
    func failed(_ error: WebSocketError, on peer: WebSocketLink) { heard.append("failed \(error.closeCode.rawValue)") }
    func closed(_ peer: WebSocketLink, code: CloseCode) { heard.append("closed \(code.rawValue)") }
}

/// Counters that remember the close codes they were told (as `ServerCounters` counts them).
private final class CodeCounters: LinkCounters, @unchecked Sendable {
    var codes: [UInt16] = []
    override func closed(code: CloseCode) { codes.append(code.rawValue) }
}

/// A stream whose keep-alive and end say who made them.
private final class TestStream: LinkStream {
    var keepAlive: SharedBytes { SharedBytes(Array("K".utf8)) }
    var keepAliveSeconds: UInt32 { 3 }
    func end(reason: String) -> SharedBytes { SharedBytes(Array("end: \(reason)".utf8)) }
}

/// One link on an embedded loop, its far end driven by the test.
private struct Harness {
    let loop: EventLoop
    let far: EmbeddedConnection
    let link: TestLink
    let session = Recorder()
    let counters = CodeCounters()

    init(idleSeconds: Int = 0) throws {
        loop = try EventLoop.embedded()
        var made: TestLink?
        let counters = counters
        far = try loop.connectEmbedded { channel in
            let link = TestLink(channel: channel, counters: counters, idleSeconds: idleSeconds)
            made = link
            return link
        }
        link = try #require(made)
    }

    /// The link open as `role`'s side of an upgraded connection.
    func open(_ role: WebSocketConnection.Role) {
        link.opened(WebSocketConnection(role: role), session: session)
        loop.advance()
    }

    /// Steps the loop through `seconds` one-second ticks.
    func tick(_ seconds: Int = 1) {
        for _ in 0..<seconds { loop.advance(by: 1_000_000_000) }
    }

    /// A frame from the far end: masked, as a client's, when the link is a server.
    func send(_ opcode: Opcode, _ payload: [UInt8], masked: Bool = true) {
        far.write(FrameEncoder.frame(opcode: opcode, payload: payload, maskKey: masked ? 0x3712_A5C4 : nil).array)
        loop.advance()
    }
}

@Suite("WebSocketLink: one WebSocket on a channel, for server and client")
struct WebSocketLinkTests {
    /// Messages go to the session and its answers to the wire, counted into the link's
    /// counters; the peer's close is answered, and the end is counted once with its code.
    @Test func messagesAreCountedAndTheCloseIsAnsweredAndCounted() throws {
        let harness = try Harness()
        harness.session.echo = true
        harness.open(.server)
        harness.send(.text, Array("hello".utf8))
        #expect(harness.far.read() == FrameEncoder.frame(opcode: .text, payload: Array("hello".utf8)).array)
        #expect(harness.counters.messagesIn.load(ordering: .relaxed) == 1)
        #expect(harness.counters.bytesIn.load(ordering: .relaxed) == 11)  // 2 + 4 (mask) + 5
        #expect(harness.counters.messagesOut.load(ordering: .relaxed) == 1)
        #expect(harness.counters.bytesOut.load(ordering: .relaxed) == 7)
        #expect(harness.counters.connectionsUpgraded.load(ordering: .relaxed) == 1)

        harness.send(.close, FrameEncoder.closePayload(code: .goingAway, reason: "bye"))
        #expect(harness.far.read() == FrameEncoder.frame(opcode: .close, payload: FrameEncoder.closePayload(code: .goingAway, reason: "")).array)
        #expect(harness.far.sendingShutDown, "after the close handshake the server closes the connection")
        harness.far.hangUp()
        #expect(harness.session.heard == ["opened", "text hello", "close 1001 bye", "closed 1001"])
        #expect(harness.counters.codes == [1001])
        #expect(harness.counters.connectionsUpgraded.load(ordering: .relaxed) == 0)
        #expect(!harness.link.send(text: "late"), "nothing is sent after the end")
    }

    /// A broken frame: the session hears the error, the peer a close with its code.
    @Test func aProtocolErrorClosesWithItsCode() throws {
        let harness = try Harness()
        harness.open(.server)
        harness.send(.text, Array("unmasked".utf8), masked: false)
        let answer = harness.far.read()
        #expect(answer.prefix(4) == [0x88, UInt8(answer.count - 2), 0x03, 0xEA], "close 1002: \(answer)")
        harness.far.hangUp()
        #expect(harness.session.heard == ["opened", "failed 1002", "closed 1002"])
        #expect(harness.counters.codes == [1002])
    }

    /// Our close frame unanswered: the server closes (what it queued still goes out) on the
    /// third tick, a client gives up on the server at once then (the server should have
    /// closed first); either way the end is abnormal, as no close frame came back.
    @Test(arguments: [WebSocketConnection.Role.server, .client])
    func anUnansweredCloseEndsOnTheThirdTick(role: WebSocketConnection.Role) throws {
        let harness = try Harness()
        harness.open(role)
        harness.link.close(code: .goingAway, reason: "leaving")
        harness.loop.advance()
        #expect(harness.far.read().first == 0x88)
        harness.tick(2)
        #expect(!harness.far.sendingShutDown && !harness.far.closed, "still waiting for the peer's close frame")
        harness.tick()
        if role == .server {
            #expect(harness.far.sendingShutDown && !harness.far.closed, "closed gracefully: the peer may still read")
            harness.far.hangUp()
        } else {
            #expect(harness.far.closed, "a client aborts")
        }
        #expect(harness.session.heard == ["opened", "closed 1006"])
    }

    /// Silence past the idle limit brings a ping; twice the limit, the end. The client's
    /// link has no limit (0): it never pings on its own and stays open.
    @Test func silenceBringsAPingThenTheEnd() throws {
        let harness = try Harness(idleSeconds: 5)
        harness.open(.server)
        harness.tick(4)
        #expect(harness.far.read().isEmpty)
        harness.tick()
        #expect(harness.far.read() == FrameEncoder.frame(opcode: .ping, payload: []).array)
        harness.tick(4)
        #expect(!harness.far.closed)
        harness.tick()
        #expect(harness.far.closed)
        #expect(harness.session.heard == ["opened", "closed 1006"])

        let unlimited = try Harness(idleSeconds: 0)
        unlimited.open(.client)
        unlimited.tick(100)
        #expect(unlimited.far.read().isEmpty && !unlimited.far.closed)
    }

    /// A ping of ours comes back as a pong to the session.
    @Test func aPongReachesTheSession() throws {
        let harness = try Harness()
        harness.open(.client)
        harness.link.ping([1, 2, 3])
        harness.loop.advance()
        let ping = harness.far.read()
        #expect(ping.count == 2 + 4 + 3 && ping[0] == 0x89, "a masked ping: \(ping)")
        harness.send(.pong, [1, 2, 3], masked: false)
        #expect(harness.session.heard == ["opened", "pong 3"])
    }

    /// The upgrade answer leaves in one write with what the session sends as it opens, and
    /// then what the client sent after its request is read.
    @Test func theWelcomeLeavesWithTheUpgradeAnswer() throws {
        let harness = try Harness()
        harness.session.greeting = "welcome"
        let early = FrameEncoder.frame(opcode: .text, payload: Array("early".utf8), maskKey: 0x0102_0304).array
        let response = Array("HTTP/1.1 101 Switching Protocols\r\n\r\n".utf8)
        harness.link.upgraded(WebSocketConnection(role: .server), session: harness.session, response: response, remainder: early, budget: nil)
        harness.loop.advance()
        #expect(harness.far.read() == response + FrameEncoder.frame(opcode: .text, payload: Array("welcome".utf8)).array)
        #expect(harness.session.heard == ["opened", "text early"])
        #expect(harness.counters.upgrades.load(ordering: .relaxed) == 1)
        #expect(harness.counters.messagesOut.load(ordering: .relaxed) == 1)
    }

    /// A stream (a terminal reader's): its head, its frames, its own keep-alive when quiet,
    /// its own end with the reason; no WebSocket framing anywhere.
    @Test func aStreamKeepsAliveAndEndsWithItsOwnBytes() throws {
        let harness = try Harness()
        harness.link.streaming(harness.session, stream: TestStream(), head: SharedBytes(Array("head|".utf8)))
        #expect(harness.link.sendStream(frame: SharedBytes(Array("frame|".utf8))) == false)
        harness.loop.advance()
        #expect(String(decoding: harness.far.read(), as: UTF8.self) == "head|frame|")
        harness.tick(2)
        #expect(harness.far.read().isEmpty)
        harness.tick()
        #expect(String(decoding: harness.far.read(), as: UTF8.self) == "K")
        #expect(!harness.link.send(text: "not a WebSocket"))
        harness.link.close(code: .policyViolation, reason: "private now")
        harness.loop.advance()
        #expect(String(decoding: harness.far.read(), as: UTF8.self) == "end: private now")
        #expect(harness.far.sendingShutDown)
        harness.far.hangUp()
        #expect(harness.session.heard == ["opened", "closed 1000"])
        #expect(harness.counters.codes.isEmpty, "a stream is not a WebSocket: no close code counted")
    }
}
