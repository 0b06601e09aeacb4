import Foundation
import ScrollModel
import Testing
@testable import TerminalUI

/// Issue 18's end-to-end check under real terminals: a presenter at 120 columns and followers
/// at 30, 60 and 200 on a long Markdown document with nested lists, code, wide characters and
/// emoji. Which block a screen shows is read off the screen itself: its rows are found, as a
/// run, in that width's layout of the same document.
@Suite("Following across widths under tmux", .serialized)
struct FollowAcrossWidthsTests {
    static let document: String = {
        var text = "# Field Guide\n\nA long document to follow at every width. 🎉 開始。\n"
        for part in 1...8 {
            text += "\n## Part \(part)\n\n"
            text += "Paragraph \(part)a explains part \(part) at some length so that it wraps on narrow terminals, "
            text += "with **strong** and `code` words in it, and more words after them. 第\(part)部、終わり。\n\n"
            text += "- Item \(part).1 is a list item long enough to wrap at thirty columns\n"
            text += "  - Nested \(part).1.1 日本語のテキスト\(part)\n"
            text += "    1. Deeper \(part).1.1.1 with 🚀 emoji\n"
            text += "- Item \(part).2 short\n\n"
            text += "```\nlet part\(part) = \"a code line long enough to be cut at thirty columns\"\n```\n\n"
            text += "> Quote \(part) closes the part.\n"
        }
        return text + "\nThe very last line of the guide.\n"
    }()

    static let parsed = Document(text: document, format: .markdown, name: "guide.md")

    /// The document rows a screen shows (between the sticky header and the status line).
    static func documentRows(_ screen: [String], height: Int) -> [String] {
        Array(screen.dropFirst().prefix(height - 2)).map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
    }

    /// The layout row at the screen's top: where the screen's rows appear as a run in `layout`.
    static func topRow(_ rows: [String], in layout: Layout) -> Int? {
        let texts = layout.rows.map { InlineMarkup.plain($0.text).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
        guard rows.contains(where: { !$0.isEmpty }) else { return nil }
        return (0..<max(1, texts.count)).first { start in
            rows.indices.allSatisfy { k in start + k < texts.count ? texts[start + k] == rows[k] : rows[k].isEmpty }
        }
    }

    final class Viewer {
        let tmux: Tmux
        var width: Int
        let height: Int
        init(_ tmux: Tmux, width: Int, height: Int) { (self.tmux, self.width, self.height) = (tmux, width, height) }
        var layout: Layout { Layout(document: FollowAcrossWidthsTests.parsed, width: width) }
        /// The ids of the blocks on screen, with the top row, once the screen is one of the layout's.
        func shown(_ screen: [String]) -> (top: Int, blocks: [String])? {
            let layout = layout
            guard let top = FollowAcrossWidthsTests.topRow(FollowAcrossWidthsTests.documentRows(screen, height: height), in: layout) else { return nil }
            let visible = top..<min(layout.rowCount, top + height - 2)
            return (top, visible.map { layout.document.blocks[layout.rows[$0].block].id })
        }
    }

    @Test func followersAtThirtySixtyAndTwoHundredColumnsShowThePresentersBlock() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let binary = ServerProcess.binary.path
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("guide-\(UUID().uuidString.prefix(6)).md")
        try Self.document.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "wide-\(UUID().uuidString.prefix(6))"
        let room = "\(server.url)/rooms/\(name)"
        // `--record`: the server records the talk (issue 29.3), checked at the end.
        let presenter = Viewer(try Tmux([binary, "present", room, file.path, "--key", "k", "--name", "Ann", "--record"], width: 120, height: 30),
                               width: 120, height: 30)
        presenter.tmux.wait { $0.statusLine.contains("PRESENTING") && $0.statusLine.contains("● live") }
        let followers = try [30, 60, 200].map { width in
            Viewer(try Tmux([binary, "follow", room], width: width, height: 20), width: width, height: 20)
        }
        for follower in followers {
            let ready = follower.tmux.wait(timeout: 15) { follower.shown($0) != nil && $0.statusLine.contains("FOLLOWING") }
            #expect(follower.shown(ready)?.top == 0, "\(follower.width) columns: the follower starts at the top\n\(ready.joined(separator: "\n"))")
        }
        presenter.tmux.wait { $0.statusLine.contains("3 followers") }

        /// After the presenter's screen settles on a new place: each follower shows its block.
        func check(after key: String) throws {
            let before = presenter.tmux.screen
            if key != "-" { try presenter.tmux.keys(key) }
            var screen = presenter.tmux.wait(timeout: 5) { $0 != before && presenter.shown($0) != nil }
            // Settle: the same screen twice in a row.
            screen = presenter.tmux.wait(timeout: 5) { _ in let again = presenter.tmux.screen; defer { usleep(100_000) }; return again == presenter.tmux.screen }
            let place = try #require(presenter.shown(screen), "after \(key) the presenter's screen is a place in its layout\n\(screen.joined(separator: "\n"))")
            let block = place.blocks[0]
            let atTop = place.top == 0
            let atBottom = place.top == max(0, presenter.layout.rowCount - (presenter.height - 2))
            for follower in followers {
                let last = follower.layout.rowCount - 1
                let seen = follower.tmux.wait(timeout: 5) { lines in
                    guard let shown = follower.shown(lines) else { return false }
                    if atTop { return shown.top == 0 }
                    if atBottom { return shown.top + follower.height - 2 > last }
                    return shown.blocks.contains(block)
                }
                let shown = follower.shown(seen)
                if atTop {
                    #expect(shown?.top == 0, "after \(key) at \(follower.width) columns the first line is on screen\n\(seen.joined(separator: "\n"))")
                } else if atBottom {
                    #expect(shown.map { $0.top + follower.height - 2 > last } == true, "after \(key) at \(follower.width) columns the last line is on screen\n\(seen.joined(separator: "\n"))")
                    #expect(seen.contains { $0.contains("The very last line") })
                } else {
                    #expect(shown?.blocks.contains(block) == true, "after \(key) at \(follower.width) columns: presenter's top block \(block), follower shows \(shown?.blocks ?? [])\n\(seen.joined(separator: "\n"))")
                }
            }
        }

        for key in ["n", "n", "j", "j", "j", "Space", "k", "b", "n", "n", "Space", "N", "G", "k", "g", "n", "n", "n"] {
            try check(after: key)
        }

        // Another presenter takes the room to the top; `t` takes it back, with its place.
        let other = try RoomConnection(port: server.port, path: "/rooms/\(name)?role=presenter&key=k&name=Bo")
        #expect(other.wait { $0.contains("\"type\":\"welcome\"") })
        other.send(#"{"type":"control","action":"take"}"#)
        other.send(#"{"type":"scroll","offset":0,"viewport":10,"content":400}"#)
        #expect(other.wait { $0.contains("\"type\":\"state\"") && $0.contains("\"atTop\":true") })
        for follower in followers {
            let moved = follower.tmux.wait { follower.shown($0)?.top == 0 && $0.statusLine.contains("driver Bo") }
            #expect(follower.shown(moved)?.top == 0, "\(follower.width) columns follow the other presenter to the top")
        }
        try presenter.tmux.keys("t")
        for follower in followers {
            follower.tmux.wait { $0.statusLine.contains("driver Ann") }
        }
        try check(after: "-")

        // The server recorded it: the document, then the presenter's moves by block id.
        let answer = try httpGet("/rooms/\(name)/recording?key=k", port: server.port)
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(300))")
        let recording = try Recording.read(Array(String(answer.split(separator: "\r\n\r\n", maxSplits: 1).last ?? "").utf8))
        #expect(recording.header.url == room, "the header names the room at the port the server bound: \(recording.header.url)")
        #expect(recording.events.contains { if case .document(let document) = $0.message { document.name == file.lastPathComponent } else { false } })
        let anchors = recording.events.compactMap { if case .state(let state) = $0.message { state.anchor?.id } else { nil } }
        #expect(anchors.count >= 10 && Set(anchors).count >= 3, "the moves, by block: \(anchors)")

        // Resizing a follower keeps the presenter's block in view.
        let place = try #require(presenter.shown(presenter.tmux.screen))
        for follower in followers {
            let width = follower.width == 200 ? 90 : follower.width + 17
            try run("tmux", Tmux.socket + ["resize-window", "-t", follower.tmux.name, "-x", String(width), "-y", String(follower.height)])
            follower.width = width
            let seen = follower.tmux.wait { follower.shown($0)?.blocks.contains(place.blocks[0]) == true }
            #expect(follower.shown(seen)?.blocks.contains(place.blocks[0]) == true,
                    "resized to \(width) columns the follower still shows \(place.blocks[0])\n\(seen.joined(separator: "\n"))")
        }
    }
}
