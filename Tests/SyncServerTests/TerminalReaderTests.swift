import Operations
import ScrollModel
@testable import SyncServer
import TerminalFrames
import TerminalUI
import TestSupport
import Testing
import Transport

/// `curl -N http://HOST/rooms/NAME/tty?cols=C&rows=R` on the in-process server: the request,
/// then the answer's head and each chunk as it comes (a frame: cursor home, the view, clear
/// to the end). Its socket takes only what `connection.window` lets through.
final class TerminalReader {
    let connection: EmbeddedConnection
    let loop: EventLoop
    private var pending = [UInt8]()
    private(set) var head = ""
    /// A non-chunked answer's body (a refusal, a page).
    private(set) var body = ""
    private(set) var chunks = [String]()
    private(set) var ended = false

    init(_ server: Server, loop: EventLoop, path: String, headers: [String] = [], from address: String = "127.0.0.1") {
        self.loop = loop
        connection = server.connectEmbedded(from: address)
        connection.write(Array("GET \(path) HTTP/1.1\r\nHost: test\r\n\(headers.map { $0 + "\r\n" }.joined())\r\n".utf8))
    }

    var status: String { head.split(separator: "\r\n").first.map(String.init) ?? "" }

    /// The frames so far (the first chunk, which clears the screen once, is none).
    var frames: [String] { chunks.filter { $0.hasPrefix("\u{1B}[H") && $0.hasSuffix("\u{1B}[J") } }

    /// The newest frame's lines as a terminal shows them (styles left out).
    var lastLines: [String] { frames.last.map(Self.lines) ?? [] }

    static func lines(of frame: String) -> [String] {
        frame.replacing(/\x{1B}\[[0-9;]*[mHJ]/, with: "").split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
    }

    func pump() {
        pending += connection.read()
        if head.isEmpty {
            guard let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
            pending.removeSubrange(..<end.upperBound)
        }
        guard head.contains("Transfer-Encoding: chunked") else {
            body += String(decoding: pending, as: UTF8.self)
            pending = []
            return
        }
        while !ended, let line = pending.firstRange(of: [13, 10]) {
            guard let size = Int(String(decoding: pending[..<line.lowerBound], as: UTF8.self), radix: 16) else { return }
            if size == 0 { ended = true; return }
            guard pending.count >= line.upperBound + size + 2 else { return }
            chunks.append(String(decoding: pending[line.upperBound..<line.upperBound + size], as: UTF8.self))
            pending.removeSubrange(..<(line.upperBound + size + 2))
        }
    }

    /// Steps the loop (and waits for the render thread) until `condition` holds.
    @discardableResult
    func wait(_ condition: () -> Bool) -> Bool { loop.advance(until: { pump(); return condition() }) }

    /// Until the newest frame shows `text`.
    @discardableResult
    func waitForFrame(showing text: String) -> Bool { wait { lastLines.joined(separator: "\n").contains(text) } }
}

@Suite("Terminal readers: GET /rooms/NAME/tty")
struct TerminalReaderTests {
    static let document = "# Tour\n\n" + (1...40).map { "## Part \($0)\n\nText of part \($0), long enough that it wraps on a narrow terminal." }
        .joined(separator: "\n\n")

    static func share(_ text: String, name: String = "tour.md") -> String { documentMessage(text, name: name) }

    /// A place inside the document (at offset 0 a presenter is at the top, and so is everyone).
    static func scroll(to id: String, offset: Int = 100) -> String {
        #"{"type":"scroll","offset":\#(offset),"viewport":20,"content":400,"anchor":{"id":"\#(id)","fraction":0}}"#
    }

    /// A room with a presenter (Ann) that shared the tour and stands at `section`.
    static func room(_ name: String = "talk", at section: String = "part-20",
                     _ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws -> (Server, EventLoop, InProcessClient) {
        let (server, loop) = try InProcessRoomTests.server(adjust)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/\(name)?role=presenter&key=k&name=Ann")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        presenter.send(share(document))
        presenter.send(scroll(to: section))
        #expect(presenter.wait { $0.contains(#""type":"state""#) })
        return (server, loop, presenter)
    }

    @Test func framesShowThePresentersSectionAtTheReadersSizeAndFollowIt() throws {
        let (server, loop, presenter) = try Self.room()
        defer { server.shutdown() }
        let reader = TerminalReader(server, loop: loop, path: "/rooms/talk/tty?cols=50&rows=12")
        #expect(reader.waitForFrame(showing: "Part 20"), "\(reader.head) \(reader.lastLines)")
        #expect(reader.status == "HTTP/1.1 200 OK" && reader.head.contains("Content-Type: text/plain; charset=utf-8"), "\(reader.head)")
        let lines = reader.lastLines
        #expect(lines.count == 12, "\(lines)")
        #expect(lines.allSatisfy { DisplayWidth.of($0) == 50 }, "every line is the width asked for: \(lines.map { DisplayWidth.of($0) })")
        #expect(lines[0].contains("Tour › Part 20") || lines[1].contains("Part 20"), "the section is pinned or on top: \(lines)")
        #expect(lines.last?.contains("FOLLOWING") == true && lines.last?.contains("driver Ann") == true, "the status line: \(lines.last ?? "")")
        presenter.send(Self.scroll(to: "part-31"))
        #expect(reader.waitForFrame(showing: "Part 31"), "it follows: \(reader.lastLines)")
        // A follower like any other: in presence, and in /metrics.
        loop.advance(by: 1_000_000_000)  // presence goes at most every 250 ms
        #expect(presenter.wait { $0.contains(#""type":"presence""#) && $0.contains(#""followers":1"#) }, "\(presenter.messages.suffix(3))")
        #expect(server.hub.screenRenderer.counters.readers.load(ordering: .relaxed) == 1)
        #expect(ask("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", of: server, on: loop).contains("scrollsync_tty_readers 1"))
        reader.connection.hangUp()
        loop.advance(by: 1_000_000_000)
        #expect(presenter.wait { $0.contains(#""type":"presence""#) && $0.contains(#""followers":0"#) }, "it left")
    }

    /// Readers of one size share one rendered frame per change; three sizes, three renders.
    @Test func oneRenderPerSizeWhateverTheReaders() throws {
        let (server, loop, presenter) = try Self.room()
        defer { server.shutdown() }
        let sizes = ["cols=40&rows=10", "cols=80&rows=24", "cols=120&rows=30"]
        let readers = (0..<30).map { TerminalReader(server, loop: loop, path: "/rooms/talk/tty?\(sizes[$0 % 3])") }
        for reader in readers { #expect(reader.waitForFrame(showing: "Part 20")) }
        let counters = server.hub.screenRenderer.counters
        let before = counters.framesRendered.load(ordering: .relaxed)
        presenter.send(Self.scroll(to: "part-33"))
        for reader in readers { #expect(reader.waitForFrame(showing: "Part 33")) }
        #expect(counters.framesRendered.load(ordering: .relaxed) - before == 3, "one frame per size, not per reader")
    }

    /// A quiet room: after `ScreenStream.keepAliveSeconds` without a frame a reader is sent a
    /// chunk that changes nothing on its screen (an SGR reset), so that proxies keep the stream;
    /// no frame is sent again, and no keep-alive comes before its time.
    @Test func aQuietRoomKeepsTheStreamWithAChunkThatChangesNothing() throws {
        let (server, loop, presenter) = try Self.room()
        defer { server.shutdown() }
        let reader = TerminalReader(server, loop: loop, path: "/rooms/talk/tty?cols=100&rows=8")
        loop.advance(by: 1_000_000_000)  // presence goes at most every 250 ms
        #expect(reader.waitForFrame(showing: "1 follower"), "\(reader.lastLines)")
        let (frames, chunks) = (reader.frames.count, reader.chunks.count)
        let period = UInt64(ScreenStream.keepAliveSeconds) * 1_000_000_000
        loop.advance(to: loop.now + period - 2_000_000_000)
        reader.pump()
        #expect(reader.chunks.count == chunks, "too soon: \(reader.chunks.suffix(1))")
        loop.advance(to: loop.now + 3_000_000_000)
        #expect(reader.wait { reader.chunks.count == chunks + 1 }, "\(reader.chunks.count - chunks) chunks")
        #expect(reader.chunks.last == "\u{1B}[0m" && reader.frames.count == frames)
        loop.advance(to: loop.now + period)
        #expect(reader.wait { reader.chunks.count == chunks + 2 }, "one a period: \(reader.chunks.count - chunks)")
        presenter.send(Self.scroll(to: "part-31"))
        #expect(reader.waitForFrame(showing: "Part 31"), "frames still come: \(reader.lastLines)")
    }

    /// A reader that stops reading holds at most one frame in the server (its slot), and gets
    /// the newest when it reads again, not a backlog.
    @Test func aReaderThatDoesNotReadGetsTheNewestFrame() throws {
        let (server, loop, presenter) = try Self.room(at: "part-1")
        defer { server.shutdown() }
        let reader = TerminalReader(server, loop: loop, path: "/rooms/talk/tty?cols=60&rows=8")
        #expect(reader.waitForFrame(showing: "Part 1"))
        reader.connection.window = 0
        let before = reader.frames.count
        let counters = server.hub.screenRenderer.counters
        let conflatedBefore = counters.framesConflated.load(ordering: .relaxed)
        // Each state's frame is handed to the reader's slot before the next state is sent (the
        // render thread may be slow on a busy machine: waiting on the count, not on time, so
        // every frame reaches the slot and each replaces the last).
        for step in 1...20 {
            let sent = counters.framesSent.load(ordering: .relaxed)
            presenter.send(Self.scroll(to: "part-\(2 + step)", offset: step))
            #expect(reader.wait { counters.framesSent.load(ordering: .relaxed) > sent }, "step \(step): no frame handed over")
        }
        let sent = counters.framesSent.load(ordering: .relaxed)
        presenter.send(Self.scroll(to: "part-40", offset: 400))
        #expect(presenter.wait { $0.contains(#""offset":400,"#) })
        #expect(reader.wait { counters.framesSent.load(ordering: .relaxed) > sent })
        // 21 frames: the first waits in the write queue, the second in the slot, and each of
        // the 19 after it replaces the one in the slot.
        #expect(counters.framesConflated.load(ordering: .relaxed) - conflatedBefore == 19, "each frame replaced the last in the slot")
        reader.pump()
        #expect(reader.frames.count == before, "nothing got through a closed window")
        reader.connection.acceptMore(nil)
        #expect(reader.waitForFrame(showing: "Part 40"), "\(reader.lastLines)")
        #expect(reader.frames.count - before < 10, "a backlog was kept: \(reader.frames.count - before) frames")
    }

    /// Issue 17's hostile documents and names: the frames carry no escape sequence but the
    /// renderer's own (styles, cursor home, clear); the text shows as pictures.
    @Test func hostileDocumentsYieldNoEscapeSequence() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/evil?role=presenter&key=k&name=Eve%1b%5d52%3bc%3baGk%3d%07")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        let hostile = HostileText.attacks.joined(separator: " ")
        presenter.send(Self.share("# Title \(hostile)\n\nBody \(hostile)\n\n## Section \(hostile)\n\n- item \(hostile)\n\n```\ncode \(hostile)\n```\n",
                                  name: "evil\u{1B}[2J.md"))
        presenter.send(#"{"type":"scroll","offset":2,"viewport":10,"content":20}"#)
        let reader = TerminalReader(server, loop: loop, path: "/rooms/evil/tty?cols=100&rows=30")
        #expect(reader.waitForFrame(showing: "Body"), "\(reader.lastLines)")
        #expect(reader.wait { reader.lastLines.last?.contains("driver Eve") == true })
        for chunk in reader.chunks { #expect(HostileText.strayControls(chunk).isEmpty, "\(HostileText.strayControls(chunk))") }
        #expect(reader.lastLines.joined().contains("\u{241B}]52;c;"), "the clipboard write is shown as text")
    }

    @Test func sizesAreClampedAndANumberThatIsNoneIsRefused() throws {
        let (server, loop, _) = try Self.room()
        defer { server.shutdown() }
        let tiny = TerminalReader(server, loop: loop, path: "/rooms/talk/tty?cols=3&rows=1")
        #expect(tiny.waitForFrame(showing: "Part"))
        #expect(tiny.lastLines.count == 5 && tiny.lastLines.allSatisfy { DisplayWidth.of($0) == 20 }, "\(tiny.lastLines)")
        let plain = TerminalReader(server, loop: loop, path: "/rooms/talk/tty")
        #expect(plain.waitForFrame(showing: "Part"))
        #expect(plain.lastLines.count == 24 && plain.lastLines.allSatisfy { DisplayWidth.of($0) == 80 }, "80×24 by default")
        let bad = TerminalReader(server, loop: loop, path: "/rooms/talk/tty?cols=wide")
        #expect(bad.wait { bad.body.contains("\n") })
        #expect(bad.status.hasPrefix("HTTP/1.1 400 ") && bad.body.contains("cols must be a whole number"), "\(bad.head)\n\(bad.body)")
        let presenter = TerminalReader(server, loop: loop, path: "/rooms/talk/tty?role=presenter")
        #expect(presenter.wait { presenter.body.contains("\n") })
        #expect(presenter.status.hasPrefix("HTTP/1.1 400 ") && presenter.body.contains("follows a room"), "\(presenter.body)")
    }

    /// A private room's reader needs the follow key (as a query parameter), as a follower does.
    @Test func aPrivateRoomNeedsItsFollowKey() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/board?role=presenter&key=k&followKey=letmein")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        presenter.send(Self.share(Self.document))
        presenter.send(Self.scroll(to: "part-5"))
        let stranger = TerminalReader(server, loop: loop, path: "/rooms/board/tty")
        #expect(stranger.wait { stranger.body.contains("\n") })
        #expect(stranger.status.hasPrefix("HTTP/1.1 401 "), "\(stranger.head)\n\(stranger.body)")
        let wrong = TerminalReader(server, loop: loop, path: "/rooms/board/tty?followKey=guess")
        #expect(wrong.wait { wrong.body.contains("\n") })
        #expect(wrong.status.hasPrefix("HTTP/1.1 403 "), "\(wrong.head)")
        let guest = TerminalReader(server, loop: loop, path: "/rooms/board/tty?followKey=letmein")
        #expect(guest.waitForFrame(showing: "Part 5"), "\(guest.head) \(guest.body)")
    }

    @Test func readersAreLimitedPerAddressAndInAll() throws {
        let (server, loop, _) = try Self.room { $0.limits.ttyReadersPerAddress = 1; $0.limits.ttyReaders = 2 }
        defer { server.shutdown() }
        let first = TerminalReader(server, loop: loop, path: "/rooms/talk/tty", from: "10.0.0.1")
        #expect(first.waitForFrame(showing: "Part"))
        let second = TerminalReader(server, loop: loop, path: "/rooms/talk/tty", from: "10.0.0.1")
        #expect(second.wait { second.body.contains("\n") })
        #expect(second.status.hasPrefix("HTTP/1.1 429 ") && second.body.contains("too many terminal readers"), "\(second.body)")
        let other = TerminalReader(server, loop: loop, path: "/rooms/talk/tty", from: "10.0.0.2")
        #expect(other.waitForFrame(showing: "Part"))
        let third = TerminalReader(server, loop: loop, path: "/rooms/talk/tty", from: "10.0.0.3")
        #expect(third.wait { third.body.contains("\n") })
        #expect(third.status.hasPrefix("HTTP/1.1 503 ") && third.body.contains("limit of terminal readers (2)"), "\(third.body)")
        first.connection.hangUp()
        loop.advance()
        let again = TerminalReader(server, loop: loop, path: "/rooms/talk/tty", from: "10.0.0.1")
        #expect(again.waitForFrame(showing: "Part"), "a reader that left frees its place")
    }

    /// From a browser's address bar (`Accept: text/html`, no size): the room's viewer page, which
    /// shows the one-liner (its host as the request named it, only a host's characters).
    @Test func aBrowserGetsTheViewerPageWithTheOneLiner() throws {
        let (server, loop, _) = try Self.room()
        defer { server.shutdown() }
        let browser = TerminalReader(server, loop: loop, path: "/rooms/talk/tty", headers: ["Accept: text/html,application/xhtml+xml"])
        #expect(browser.wait { browser.body.contains("</html>") })
        #expect(browser.status == "HTTP/1.1 200 OK" && browser.head.contains("text/html"), "\(browser.head)")
        #expect(browser.body.contains("curl -N &quot;http://test/rooms/talk/tty?cols=$(tput cols)&amp;rows=$(tput lines)&quot;"), "\(browser.body)")
        let page = ask("GET /rooms/talk HTTP/1.1\r\nHost: evil$(id)\r\nAccept: text/html\r\n\r\n", of: server, on: loop)
        #expect(page.contains("curl -N &quot;http://HOST:PORT/rooms/talk/tty?"), "a Host that is no host is not pasted into a shell: \(page)")
    }
}
