import Access
import Foundation
import ScrollModel
import SyncServer
import Testing
@testable import TerminalUI

/// Issue 21: the browser viewer in a real browser (Debian's chromium, headless, driven over
/// the DevTools protocol), with terminals under tmux in the same rooms.
@Suite("Browser viewer under headless Chromium", .serialized)
struct BrowserViewerTests {
    static func js(_ text: String) -> String {
        var writer = JSONWriter()
        writer.string(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Whether block `id` is on screen between the sticky title bar and the status bar.
    static func visible(_ id: String) -> String {
        """
        (() => { const el = document.querySelector('main').querySelector(`[id="${CSS.escape(\(js(id)))}"]`); if (!el) return false;
          const r = el.getBoundingClientRect();
          const top = document.getElementById('ui_titlebar').getBoundingClientRect().bottom;
          const bottom = document.getElementById('ui_status').getBoundingClientRect().top;
          return r.bottom > top && r.top < bottom && window.scrollsync.state.target === null; })()
        """
    }
    static let atTop = "window.scrollY === 0 && window.scrollsync.state.target === null"
    static let atBottom = "window.scrollY >= document.documentElement.scrollHeight - innerHeight - 1 && window.scrollsync.state.target === null"
    static let rendered = "document.querySelectorAll('main .block').length > 10"

    /// Shares FollowAcrossWidthsTests' guide from `presenter`.
    static func shareGuide(_ presenter: RoomConnection) { share(FollowAcrossWidthsTests.document, name: "guide.md", from: presenter) }

    /// Shares Markdown `text` as `name` from `presenter`.
    static func share(_ text: String, name: String, from presenter: RoomConnection) { presenter.send(documentMessage(text, name: name)) }

    func open(_ browser: Chromium, _ url: String, width: Int, height: Int) throws -> CDPPage {
        let page = try browser.page(width: width, height: height)
        try page.call("Page.navigate", #"{"url":\#(Self.js(url))}"#)
        #expect(page.wait(Self.rendered, timeout: 15), "the page at \(width)×\(height) rendered the document")
        return page
    }

    func document() throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("guide-\(UUID().uuidString.prefix(6)).md")
        try FollowAcrossWidthsTests.document.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// (1) A terminal presenter at 120 columns and browser followers at 390 × 844 and
    /// 1920 × 1080: after each move each browser shows the presenter's top block, its first
    /// line at the start and its last at the end.
    @Test func browserFollowersLandOnTheTerminalPresentersBlock() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let file = try document()
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "browser-\(UUID().uuidString.prefix(6))"
        let presenter = FollowAcrossWidthsTests.Viewer(
            try Tmux([ServerProcess.binary.path, "present", "\(server.url)/rooms/\(name)", file.path, "--key", "k", "--name", "Ann"], width: 120, height: 30),
            width: 120, height: 30)
        presenter.tmux.wait { $0.statusLine.contains("PRESENTING") && $0.statusLine.contains("● live") }
        let browser = try Chromium()
        let url = "http://127.0.0.1:\(server.port)/rooms/\(name)"
        let pages = [try open(browser, url, width: 390, height: 844), try open(browser, url, width: 1920, height: 1080)]
        for page in pages {
            #expect(page.wait("document.getElementById('ui_driver').textContent === 'driver Ann'"), "the driver by name")
        }
        for key in ["n", "n", "j", "Space", "n", "G", "N", "g", "n", "n", "n"] {
            let before = presenter.tmux.screen
            try presenter.tmux.keys(key)
            var screen = presenter.tmux.wait(timeout: 5) { $0 != before && presenter.shown($0) != nil }
            screen = presenter.tmux.wait(timeout: 5) { _ in let again = presenter.tmux.screen; defer { usleep(100_000) }; return again == presenter.tmux.screen }
            let place = try #require(presenter.shown(screen), "after \(key) the presenter shows a place")
            let atTop = place.top == 0
            let atBottom = place.top == max(0, presenter.layout.rowCount - (presenter.height - 2))
            let condition = atTop ? Self.atTop : atBottom ? Self.atBottom : Self.visible(place.blocks[0])
            for (page, size) in zip(pages, ["390×844", "1920×1080"]) {
                #expect(page.wait(condition), "after \(key) the browser at \(size) shows \(atTop ? "the top" : atBottom ? "the end" : place.blocks[0])")
            }
        }
    }

    /// (2) A browser presenter drives a terminal follower to the same block.
    @Test func aBrowserPresenterDrivesATerminalFollower() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let name = "browser-\(UUID().uuidString.prefix(6))"
        // The room's document comes from a presenter that shares it and leaves.
        let sharer = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&key=k")
        #expect(sharer.wait { $0.contains(#""type":"welcome""#) })
        Self.shareGuide(sharer)
        #expect(sharer.wait { $0.contains(#""type":"document""#) })
        sharer.client.shutdownBothWays()

        let follower = FollowAcrossWidthsTests.Viewer(
            try Tmux([ServerProcess.binary.path, "follow", "\(server.url)/rooms/\(name)"], width: 60, height: 20), width: 60, height: 20)
        follower.tmux.wait { $0.statusLine.contains("FOLLOWING") && follower.shown($0) != nil }
        let browser = try Chromium()
        let page = try open(browser, "http://127.0.0.1:\(server.port)/rooms/\(name)?present&key=k", width: 1000, height: 640)
        #expect(page.wait("document.getElementById('ui_role').textContent === 'PRESENTING'"), "the browser drives")
        let address = try page.evaluate("location.href").string ?? ""
        #expect(!address.contains("key") && address.contains("?present"), "the key is taken out of the address bar: \(address)")
        for block in ["part-5", "part-2.2", "part-7.4"] {
            _ = try page.evaluate("window.scrollTo(0, document.getElementById(\(Self.js(block))).getBoundingClientRect().top + scrollY - document.getElementById('ui_titlebar').getBoundingClientRect().height + 1)")
            // The block at the top of the browser's view once it has settled (the title bar may shrink).
            usleep(300_000)
            let top = try #require(try page.evaluate("window.scrollsync.anchorHere().id").string)
            #expect(top != "field-guide", "the browser moved")
            let seen = follower.tmux.wait { follower.shown($0)?.blocks.first == top }
            #expect(follower.shown(seen)?.blocks.first == top, "the terminal follower's top block is the browser's, \(top): \(seen.joined(separator: "\n"))")
        }
        // README's screenshot of the browser presenting, when asked for (TEST_SCREENSHOTS=DIR).
        if let directory = ProcessInfo.processInfo.environment["TEST_SCREENSHOTS"] {
            let shot = try page.call("Page.captureScreenshot", #"{"format":"png"}"#)
            let data = try #require(shot["data"]?.string.flatMap { Data(base64Encoded: $0) })
            try data.write(to: URL(fileURLWithPath: directory).appendingPathComponent("browser-viewer.png"))
        }
    }

    /// (3) Scrolling in the browser detaches (the room counts it), f follows again; (4) a
    /// hostile document renders as text.
    @Test func userScrollDetachesFResumesAndHostileMarkupIsText() throws {
        let server = try InProcessNode()
        let name = "browser-\(UUID().uuidString.prefix(6))"
        let presenter = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&key=k&name=Eve")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        let hostile = "# Title\n\n<script>alert(1)</script> <img src=x onerror=alert(2)> [link](javascript:alert(3)) <iframe src=//evil></iframe>\n\n"
            + (1...60).map { "Paragraph \($0) with some words to scroll past." }.joined(separator: "\n\n")
        presenter.send(documentMessage(hostile, name: "evil.md"))
        presenter.send(#"{"type":"scroll","offset":50,"viewport":10,"content":200,"anchor":{"id":"title.30","fraction":0}}"#)
        let browser = try Chromium()
        let page = try open(browser, "http://127.0.0.1:\(server.port)/rooms/\(name)", width: 800, height: 600)
        #expect(try page.evaluate("document.querySelectorAll('script:not([src]), main img, main a, main iframe').length").double == 0,
                "no element came from the document")
        #expect(try page.evaluate("document.querySelector('main').textContent.includes('<script>alert(1)</script>')").bool == true)
        #expect(page.wait(Self.visible("title.30")))

        try page.call("Input.dispatchMouseEvent", #"{"type":"mouseWheel","x":300,"y":300,"deltaX":0,"deltaY":600}"#)
        #expect(page.wait("document.getElementById('ui_role').textContent === 'DETACHED'"), "scrolling yourself detaches")
        #expect(presenter.wait { $0.contains(#""detached":1"#) }, "the room counts the browser as detached")
        presenter.send(#"{"type":"scroll","offset":5,"viewport":10,"content":200,"anchor":{"id":"title.10","fraction":0}}"#)
        #expect(presenter.wait { $0.contains(#""id":"title.10""#) })
        #expect(!page.wait(Self.visible("title.10"), timeout: 1), "a detached browser stays where it is")
        try page.call("Input.dispatchKeyEvent", #"{"type":"keyDown","key":"f","text":"f"}"#)
        #expect(page.wait("document.getElementById('ui_role').textContent === 'FOLLOWING'"), "f follows again")
        #expect(page.wait(Self.visible("title.10")), "and goes to the presenter's block")
    }
}

extension BrowserViewerTests {
    /// A private room's page asks for the follow key (the socket's 401 is not visible to a
    /// page), then follows with it; the key never stays in the address bar.
    @Test func aPrivateRoomsPageAsksForTheFollowKeyThenFollows() throws {
        let server = try InProcessNode()
        let name = "private-\(UUID().uuidString.prefix(6))"
        let presenter = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&key=k&followKey=fk-browser-1")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        Self.shareGuide(presenter)
        #expect(presenter.wait { $0.contains(#""type":"document""#) })
        let browser = try Chromium()
        let page = try browser.page(width: 1000, height: 700)
        try page.call("Page.navigate", #"{"url":\#(Self.js("http://127.0.0.1:\(server.port)/rooms/\(name)"))}"#)
        #expect(page.wait("!document.getElementById('ui_private').hidden"), "the page asks for the follow key")
        #expect(try page.evaluate("document.querySelectorAll('main .block').length").double == 0, "and shows nothing of the room")
        _ = try page.evaluate("document.getElementById('ui_followkey').value = 'wrong'; document.getElementById('ui_private').requestSubmit()")
        #expect(page.wait("document.getElementById('ui_privatewhy').textContent === 'Wrong follow key.'"))
        _ = try page.evaluate("document.getElementById('ui_followkey').value = 'fk-browser-1'; document.getElementById('ui_private').requestSubmit()")
        #expect(page.wait(Self.rendered, timeout: 15), "with the key the document renders")
        #expect(page.wait("document.getElementById('ui_link').textContent === '● live'"), "and the page follows the room")
        #expect(presenter.wait { $0.contains(#""followers":1"#) })
    }
}

extension BrowserViewerTests {
    /// Issue 27.4: a presenter's name from the form; a wrong key can be corrected without a
    /// reload, and a right one clears the refusal.
    @Test func theBrowserFormTakesANameAndRecoversFromAWrongKey() throws {
        let server = try InProcessNode()
        let name = "form-\(UUID().uuidString.prefix(6))"
        let owner = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&key=right")
        #expect(owner.wait { $0.contains(#""type":"welcome""#) })
        owner.send(#"{"type":"control","action":"release"}"#)
        let browser = try Chromium()
        let page = try browser.page(width: 1000, height: 700)
        try page.call("Page.navigate", #"{"url":\#(Self.js("http://127.0.0.1:\(server.port)/rooms/\(name)"))}"#)
        #expect(page.wait("document.getElementById('ui_link').textContent === '● live'"))
        _ = try page.evaluate("document.getElementById('ui_name').value = 'Cy'; document.getElementById('ui_key').value = 'wrong'; document.getElementById('ui_present').requestSubmit()")
        #expect(page.wait("!document.getElementById('ui_present').hidden && document.getElementById('ui_place').textContent.includes('refused')"),
                "the form comes back with the reason")
        #expect(page.wait("document.getElementById('ui_role').textContent === 'FOLLOWING' && document.getElementById('ui_link').textContent === '● live'"),
                "and the page follows again meanwhile")
        _ = try page.evaluate("document.getElementById('ui_key').value = 'right'; document.getElementById('ui_present').requestSubmit()")
        #expect(page.wait("document.getElementById('ui_role').textContent.startsWith('PRESENT') && !document.getElementById('ui_place').textContent.includes('refused')"),
                "a right key clears the refusal")
        _ = try page.evaluate("window.scrollsync.state.socket.send(JSON.stringify({type: 'control', action: 'take'}))")
        #expect(owner.wait { $0.contains(#""type":"driver""#) && $0.contains(#""name":"Cy""#) }, "the room knows the browser presenter by name")
    }
}

extension BrowserViewerTests {
    /// With auth.required, an application's link with a token opens the viewer (room and
    /// document), and the token leaves the address bar.
    @Test func aLinkWithATokenOpensTheViewerWhereTokensAreRequired() throws {
        let secret = "browser-secret-0123456789abcdef0123456789"
        let server = try InProcessNode {
            $0.authSecret = secret
            $0.authRequired = true
        }
        let name = "token-\(UUID().uuidString.prefix(6))"
        let now = Int(Date().timeIntervalSince1970)
        let verifier = TokenVerifier(secret: secret)
        let presenterToken = verifier.mint(TokenClaims(room: name, role: .presenter, name: "Ann", expires: now + 600), issuedAt: now)
        let presenter = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&token=\(presenterToken)")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) }, "\(presenter.answer)")
        Self.shareGuide(presenter)
        #expect(presenter.wait { $0.contains(#""type":"document""#) })
        let token = verifier.mint(TokenClaims(room: name, role: .follower, expires: now + 600), issuedAt: now)
        let browser = try Chromium()
        let page = try open(browser, "http://127.0.0.1:\(server.port)/rooms/\(name)?token=\(token)", width: 1000, height: 700)
        #expect(page.wait("document.getElementById('ui_link').textContent === '● live'"))
        #expect(!(try page.evaluate("location.href").string ?? "token=").contains("token="), "the token left the address bar")
    }
}

extension BrowserViewerTests {
    /// A browser page on a room whose presenter shared `text`, with all it needs kept alive.
    static func pageOfRoom(sharing text: String) throws -> (InProcessNode, RoomConnection, Chromium, CDPPage) {
        let server = try InProcessNode()
        let name = "room-\(UUID().uuidString.prefix(6))"
        let presenter = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        share(text, name: "shared.md", from: presenter)
        #expect(presenter.wait { $0.contains(#""type":"document""#) })
        let browser = try Chromium()
        let page = try browser.page(width: 1000, height: 700)
        try page.call("Page.navigate", #"{"url":\#(js("http://127.0.0.1:\(server.port)/rooms/\(name)"))}"#)
        return (server, presenter, browser, page)
    }

    /// Issue 47.13: the browser shows the terminal's code tokens as the server's spans, in
    /// colour; the code's text (markup included) stays text.
    @Test func codeIsHighlightedInTheBrowser() throws {
        let text = "# Code\n\n```swift\nlet s = \"<img src=x onerror=alert(1)>\" // note\n```\n\n```\nplain <b>text</b>\n```\n"
        let room = try Self.pageOfRoom(sharing: text)
        defer { withExtendedLifetime(room) {} }  // the server, presenter and browser too
        let page = room.3
        #expect(page.wait("document.querySelector('pre[data-language=\"swift\"] .tok-keyword') !== null"), "the code block has spans")
        let tokens = try page.evaluate("[...document.querySelectorAll('main .tok-keyword, main .tok-string, main .tok-comment')].map(e => e.className + ':' + e.textContent).join('|')")
        #expect(tokens.string == #"tok-keyword:let|tok-string:"<img src=x onerror=alert(1)>"|tok-comment:// note"#, "\(tokens)")
        let colours = try page.evaluate("""
            (() => { const c = s => getComputedStyle(document.querySelector(s)).color;
              const plain = getComputedStyle(document.querySelectorAll('main pre code')[1]).color;
              return [c('.tok-keyword'), c('.tok-string'), c('.tok-comment'), plain].join('|'); })()
            """).string ?? ""
        #expect(Set(colours.split(separator: "|")).count == 4, "keyword, string, comment and plain code differ in colour: \(colours)")
        #expect(try page.evaluate("document.querySelectorAll('main img, main b').length").double == 0, "the code's markup stayed text")
        #expect(try page.evaluate("document.querySelectorAll('main pre')[1].querySelectorAll('span').length").double == 0, "no language, no spans")
    }
}
