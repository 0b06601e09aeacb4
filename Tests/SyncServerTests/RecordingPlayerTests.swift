import Foundation
import ScrollModel
@testable import SyncServer
import Testing
@testable import TerminalUI

/// Issue 48.2: a recording played by the browser viewer, served at `/rooms/NAME/recording` to a
/// browser and written as one self-contained page by `play FILE --html`.
@Suite("Recordings in the browser", .serialized)
struct RecordingPlayerTests {
    static let by = "00000000000000a1"

    /// A recording of a talk through `text`: presence and driver at 0, then a state every
    /// `step` seconds with each of `anchors` at the top.
    static func recording(text: String = FollowAcrossWidthsTests.document, anchors: [String], step: Double = 2,
                          driverName: String = "Ann") -> String {
        var document = JSONWriter()
        document.beginObject()
        document.field("type", "document")
        document.field("name", "guide.md")
        document.field("format", "markdown")
        document.field("doc", "0000000000000000")
        document.field("by", by)
        document.field("text", text)
        document.endObject()
        var name = JSONWriter()
        name.string(driverName)
        var lines = [#"{"format":"scrollsync-recording","version":1,"room":"talk","started":"2026-11-26T09:00:00Z","url":"ws://h/rooms/talk","document":"#
            + String(decoding: document.bytes, as: UTF8.self) + "}",
            #"[0,{"type":"presence","presenters":1,"followers":3,"detached":0}]"#,
            #"[0,{"type":"driver","driver":"\#(by)","name":\#(String(decoding: name.bytes, as: UTF8.self))}]"#]
        for (index, anchor) in anchors.enumerated() {
            lines.append(#"[\#(Double(index + 1) * step),{"type":"state","seq":\#(index + 1),"offset":\#(index * 10),"viewport":24,"content":1000,"direction":"down","by":"\#(by)","anchor":{"id":"\#(anchor)","fraction":0}}]"#)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static let parts = ["field-guide"] + (1...8).map { "part-\($0)" }

    /// Writes `text` to a file and runs `play FILE --html PAGE`; the page's path.
    static func htmlPage(_ text: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("player-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("talk.rec"), page = directory.appendingPathComponent("talk.html")
        try Data(text.utf8).write(to: file)
        let result = try run(ServerProcess.binary.path, ["play", file.path, "--html", page.path])
        #expect(result.status == 0, "\(result.output)")
        return page
    }

    /// A tab that records script errors from its first moment, offline.
    static func offlinePage(_ browser: Chromium) throws -> CDPPage {
        let page = try browser.page(width: 1000, height: 700)
        try page.call("Page.enable")
        try page.call("Page.addScriptToEvaluateOnNewDocument",
                      #"{"source":"window.__errors = []; addEventListener('error', (e) => window.__errors.push(String(e.message)));"}"#)
        try page.call("Network.enable")
        try page.call("Network.emulateNetworkConditions", #"{"offline":true,"latency":0,"downloadThroughput":-1,"uploadThroughput":-1}"#)
        return page
    }

    /// Chooses `file` in the page's "Open a recording" input.
    static func open(_ file: URL, in page: CDPPage) throws {
        let root = try page.call("DOM.getDocument")
        let input = try page.call("DOM.querySelector", ##"{"nodeId":\##(Int(root["root"]?["nodeId"]?.double ?? 0)),"selector":"#ui_open"}"##)
        try page.call("DOM.setFileInputFiles", #"{"nodeId":\#(Int(input["nodeId"]?.double ?? 0)),"files":[\#(BrowserViewerTests.js(file.path))]}"#)
    }

    static let position = "window.scrollsync.state.player.position()"
    static func section(_ title: String) -> String {
        "document.getElementById('ui_section').textContent === \(BrowserViewerTests.js(title)) && window.scrollsync.state.target === null"
    }
    static func choose(_ select: String, _ value: String) -> String {
        "(() => { const s = document.getElementById('\(select)'); s.value = \(BrowserViewerTests.js(value)); s.dispatchEvent(new Event('change')); return s.value; })()"
    }

    @Test func thePagesJSONCannotCloseItsScriptElement() throws {
        let hostile = "# </script><!-- \u{2028}\u{2029} <b>\n\nA & B\n"
        let text = Self.recording(text: hostile, anchors: [Document(text: hostile, format: .markdown, name: "x").blocks[0].id])
        let recording = try Recording.read(Array(text.utf8))
        let parsed = Document(text: hostile, format: .markdown, name: "x")
        let data = PlayerPage.data(recording)
        for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] { #expect(!data.contains(bad), "no \(bad.debugDescription) in \(data.prefix(200))") }
        let json = try JSON.parse(data)
        let html = try #require(json["documents"]?[parsed.fingerprint]?["html"]?.string, "\(data.prefix(300))")
        #expect(html.contains("&lt;/script&gt;&lt;!-- \u{2028}\u{2029} &lt;b&gt;"), "the document's text, escaped as HTML, comes back whole: \(html)")
        guard case .array(let sections)? = json["sections"] else { Issue.record("no sections: \(data.prefix(300))"); return }
        #expect(sections.first?["title"]?.string == "</script><!-- \u{2028}\u{2029} <b>")
        #expect(json["duration"]?.double == 2)
        let page = PlayerPage.html(recording, selfContained: true)
        #expect(page.components(separatedBy: "</script>").count == 3, "two script elements, each closed once")
        #expect(!page.contains("http://") && !page.contains("https://"), "no outside address")
    }

    /// The self-contained page's one script: the modules joined are valid JavaScript (no name
    /// declared twice) and hold nothing that would end their element early.
    @Test func theInlineScriptIsOneValidModule() throws {
        let script = ViewerAssets.inlineScript
        #expect(!script.lowercased().contains("</script") && !script.contains("<!--"))
        #expect(!script.contains("\nimport ") && !script.contains("\nexport "))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("inline-\(UUID().uuidString.prefix(8)).mjs")
        try Data(script.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try run("node", ["--check", file.path])
        #expect(result.status == 0, "\(result.output)")
    }

    /// `--html` replaces a regular file whole, and refuses a directory or a FIFO (never blocks on it).
    @Test func theHTMLPageReplacesOnlyARegularFile() throws {
        let page = try Self.htmlPage(Self.recording(anchors: ["part-1"]))
        let directory = page.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        let html = try String(contentsOf: page, encoding: .utf8)
        #expect(html.hasPrefix("<!doctype html>") && html.hasSuffix("</html>\n"))
        let rec = directory.appendingPathComponent("talk.rec").path
        let fifo = directory.appendingPathComponent("fifo.html").path
        #expect(mkfifo(fifo, 0o644) == 0)
        for target in [directory.path, fifo] {
            let result = try run(ServerProcess.binary.path, ["play", rec, "--html", target])
            #expect(result.status == 1 && result.output.contains("refusing to write") && result.output.contains("not a regular file"), "\(result.output)")
        }
        let again = try run(ServerProcess.binary.path, ["play", rec, "--html", page.path])
        let rewritten = try String(contentsOf: page, encoding: .utf8)
        #expect(again.status == 0 && rewritten == html, "\(again.output)")
        let both = try run(ServerProcess.binary.path, ["play", rec, "--html", page.path, "--json"])
        #expect(both.status == 64 && both.output.contains("different outputs"), "\(both.output)")
    }

    /// The same rules as the download: each answer to a browser is the download's answer.
    @Test func aBrowserGetsThePlayerByTheDownloadsRules() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.adminToken = "admin" }
        defer { server.shutdown() }
        _ = try ServerRecordingTests.recordTalk(server, loop)
        let privately = try InProcessClient(server, loop: loop, path: "/rooms/secret?role=presenter&key=k&followKey=f&record=1")
        #expect(privately.wait { $0.contains(#""type":"welcome""#) })
        func get(_ path: String, html: Bool) -> String {
            ask("GET \(path) HTTP/1.1\r\nHost: x\r\n" + (html ? "Accept: text/html,*/*\r\n" : "") + "\r\n", of: server, on: loop)
        }
        for path in ["/rooms/talk/recording", "/rooms/talk/recording?key=wrong", "/rooms/none/recording", "/rooms/none/recording?key=k",
                     "/rooms/secret/recording", "/rooms/secret/recording?followKey=g"] {
            let download = get(path, html: false), page = get(path, html: true)
            #expect(!download.hasPrefix("HTTP/1.1 200 ") && page == download, "\(path): \(page) against \(download)")
        }
        #expect(get("/rooms/secret/recording", html: true) == get("/rooms/nobody/recording", html: true).replacingOccurrences(of: "nobody", with: "secret"),
                "a private room answers as a missing one")
        for path in ["/rooms/talk/recording?key=k", "/rooms/secret/recording?followKey=f"] {
            let page = get(path, html: true)
            #expect(page.hasPrefix("HTTP/1.1 200 ") && page.contains("Content-Type: text/html") && page.contains(#"id="ui_recording""#)
                    && page.contains("Content-Security-Policy: default-src 'self'"), "\(path): \(page.prefix(600))")
            #expect(get(path, html: false).contains("Content-Type: application/x-ndjson"))
        }
    }

    /// The `--html` page from `file://`, offline: it plays, pause holds, a section seeks, the
    /// speed changes the clock; it fetches nothing.
    @Test func theHTMLPagePlaysPausesSeeksAndChangesSpeedOffline() throws {
        let file = try Self.htmlPage(Self.recording(anchors: Self.parts))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let html = try String(contentsOf: file, encoding: .utf8)
        #expect(!html.contains("src=") && !html.contains("href=") && !html.contains("http://"), "nothing to fetch")
        let browser = try Chromium()
        let page = try Self.offlinePage(browser)
        try page.call("Page.navigate", #"{"url":\#(BrowserViewerTests.js(file.absoluteString))}"#)
        #expect(page.wait(BrowserViewerTests.rendered, timeout: 15), "the document renders from the file")
        #expect(try page.evaluate("document.getElementById('ui_time').textContent").string == "0:00 / 0:18")
        #expect(try page.evaluate("document.getElementById('ui_sections').options.length").double == 9)
        #expect(try page.evaluate("document.getElementById('ui_driver').textContent").string == "driver Ann")

        _ = try page.evaluate("document.getElementById('ui_play').click()")
        #expect(page.wait(BrowserViewerTests.visible("part-1") + " && " + Self.section("Part 1"), timeout: 15), "it plays: Part 1 comes at 0:04")
        _ = try page.evaluate("document.getElementById('ui_play').click()")
        let paused = try #require(try page.evaluate(Self.position).double)
        #expect(try page.evaluate("document.getElementById('ui_play').textContent").string == "▶ Play")
        #expect(!page.wait("\(Self.position) !== \(paused)", timeout: 1), "pause holds")

        #expect(try page.evaluate(Self.choose("ui_sections", "14")).string == "14")
        #expect(page.wait(BrowserViewerTests.visible("part-6") + " && " + Self.section("Part 6")), "a section seeks to it")
        #expect(try page.evaluate("document.getElementById('ui_time').textContent").string == "0:14 / 0:18")

        _ = try page.evaluate(Self.choose("ui_speed", "4"))
        _ = try page.evaluate("document.getElementById('ui_play').click()")
        let rate = try #require(try page.evaluate("""
            (async () => { const p = window.scrollsync.state.player, p0 = p.position(), t0 = performance.now();
              await new Promise((r) => setTimeout(r, 300)); return (p.position() - p0) / ((performance.now() - t0) / 1000); })()
            """).double)
        #expect(rate > 3.5 && rate < 4.5, "at 4× the clock runs four times as fast: \(rate)")
        #expect(page.wait("document.getElementById('ui_link').textContent.startsWith('■ ended')", timeout: 15), "and plays to the end")
        #expect(page.wait(BrowserViewerTests.atBottom) || page.wait(BrowserViewerTests.visible("part-8")), "at the last state")
        #expect(try page.evaluate("performance.getEntriesByType('resource').length").double == 0, "nothing was fetched")

        // Another recording, opened from a file in the same page: its document as text, its times.
        let vector = ViewerScriptTests.vectors.appendingPathComponent("recording.jsonl")
        try Self.open(vector, in: page)
        #expect(page.wait("document.getElementById('ui_time').textContent === '0:00 / 1:04'"), "the opened recording's length")
        #expect(page.wait("document.querySelector('main').textContent.includes('## Part two')"), "its document, as text")
        let broken = file.deletingLastPathComponent().appendingPathComponent("broken.rec")
        try Data("{\"format\":\"scrollsync-recording\",\"version\":1}\n[2,{\"type\":\"state\"}]\n[1,{\"type\":\"state\"}]\n".utf8).write(to: broken)
        try Self.open(broken, in: page)
        #expect(page.wait("document.getElementById('ui_place').textContent.includes('broken.rec: line 3: ')"), "a bad file is refused, naming its line")
        #expect(try page.evaluate("document.getElementById('ui_time').textContent").string == "0:00 / 1:04", "and the last one stays")
        let errors = try page.evaluate("window.__errors.join('; ')").string
        #expect(errors == "", "no script error: \(errors ?? "none recorded")")
    }

    /// A recording whose document and names hold markup, `</script>`, `<!--`, U+2028/2029 and
    /// control characters: no element comes from it and no script fails.
    @Test func aHostileRecordingInjectsNothing() throws {
        let hostile = "# Evil </script><script>window.pwned=1</script>\n\n<img src=x onerror=window.pwned=2> <!-- \u{2028} \u{2029} \u{1}\u{7f} [x](javascript:window.pwned=3)\n\n## Next <iframe src=x></iframe>\n\n"
            + (1...40).map { "Paragraph \($0) </script><!--." }.joined(separator: "\n\n")
        let headings = Document(text: hostile, format: .markdown, name: "evil.md").blocks.filter { if case .heading = $0.kind { true } else { false } }
        let text = Self.recording(text: hostile, anchors: headings.map(\.id), step: 0.5,
                                  driverName: "<img src=x onerror=window.pwned=4>")
        #expect(throws: Never.self) { try Recording.read(Array(text.utf8)) }
        let file = try Self.htmlPage(text)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let browser = try Chromium()
        let page = try Self.offlinePage(browser)
        try page.call("Page.navigate", #"{"url":\#(BrowserViewerTests.js(file.absoluteString))}"#)
        #expect(page.wait(BrowserViewerTests.rendered, timeout: 15))
        let sections = try page.evaluate("Array.from(document.getElementById('ui_sections').options).map((o) => o.textContent).join('|')").string ?? ""
        #expect(sections.contains("</script><script>window.pwned=1</script>") && sections.contains("<iframe"), "headings as text: \(sections)")
        _ = try page.evaluate(Self.choose("ui_sections", "1"))
        #expect(page.wait("document.getElementById('ui_section').textContent.startsWith('Next')"), "a hostile heading's section seeks")
        _ = try page.evaluate("document.getElementById('ui_play').click()")
        #expect(page.wait("document.getElementById('ui_link').textContent === '■ ended'"))
        #expect(try page.evaluate("document.querySelectorAll('img, iframe, main a, main script').length").double == 0, "no element from the recording")
        #expect(try page.evaluate("document.scripts.length").double == 2, "the page's own two scripts only")
        #expect(try page.evaluate("window.pwned === undefined").bool == true)
        #expect(try page.evaluate("document.querySelector('main').textContent.includes('<img src=x onerror=window.pwned=2>')").bool == true)
        #expect(try page.evaluate("document.getElementById('ui_driver').textContent").string == "driver <img src=x onerror=window.pwned=4>")
        // The same recording opened from a file: its document laid out by the page, as text.
        let opened = file.deletingLastPathComponent().appendingPathComponent("evil.rec")
        try Data(text.replacingOccurrences(of: "0000000000000000", with: "1111111111111111").utf8).write(to: opened)
        try Self.open(opened, in: page)
        #expect(page.wait("document.querySelector('main').textContent.includes('# Evil </script><script>window.pwned=1</script>')"))
        _ = try page.evaluate("document.getElementById('ui_play').click()")
        #expect(page.wait("document.getElementById('ui_link').textContent === '■ ended'"))
        #expect(try page.evaluate("document.querySelectorAll('img, iframe, main a, main script').length").double == 0, "no element from the file")
        #expect(try page.evaluate("window.pwned === undefined && document.scripts.length === 2").bool == true)
        let errors = try page.evaluate("window.__errors.join('; ')").string
        #expect(errors == "", "no script error: \(errors ?? "none recorded")")
    }

    /// A recorded room's page from the server: a browser at `/rooms/NAME/recording` plays it.
    @Test func aRecordedRoomsPagePlaysInTheBrowser() throws {
        let server = try InProcessNode()
        let name = "rec-\(UUID().uuidString.prefix(6))"
        let presenter = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&key=k&record=1")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        BrowserViewerTests.shareGuide(presenter)
        #expect(presenter.wait { $0.contains(#""type":"document""#) })
        for (offset, part) in [(30, "part-3"), (60, "part-6")] {
            presenter.send(#"{"type":"scroll","offset":\#(offset),"viewport":24,"content":400,"anchor":{"id":"\#(part)","fraction":0}}"#)
            #expect(presenter.wait { $0.contains(#""id":"\#(part)""#) })
        }
        let browser = try Chromium()
        let page = try browser.page(width: 800, height: 600)
        try page.call("Page.navigate", #"{"url":\#(BrowserViewerTests.js("http://127.0.0.1:\(server.port)/rooms/\(name)/recording?key=k"))}"#)
        let rendered = page.wait(BrowserViewerTests.rendered, timeout: 15)
        let shown = try page.evaluate("location.href + ' ' + document.documentElement.outerHTML.slice(0, 3000)").string ?? ""
        #expect(rendered, "the recording's document renders: \(shown)")
        #expect(!(try page.evaluate("location.href").string ?? "key=").contains("key="), "the key left the address bar")
        #expect(try page.evaluate("document.getElementById('ui_sections').options.length").double == 2)
        _ = try page.evaluate(Self.choose("ui_sections", try page.evaluate("document.getElementById('ui_sections').options[1].value").string ?? ""))
        #expect(page.wait(BrowserViewerTests.visible("part-6") + " && " + Self.section("Part 6")), "seeking to Part 6 shows it")
    }
}
