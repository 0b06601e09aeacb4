import ScrollModel
import Testing
@testable import TerminalUI

/// Issue 47.8: narrow terminals keep the section in the header and mark wrapped code.
@Suite("Narrow terminals")
struct NarrowTerminalTests {
    static let talk = "# The Presenter's Hour: What Newcomers Trip On\n\n" + (1...12).map { "Paragraph \($0) of the opening." }.joined(separator: "\n\n")
        + "\n\n## Install\n\n" + (1...12).map { "Step \($0) of the install." }.joined(separator: "\n\n") + "\n"

    static func inInstall(width: Int) throws -> ViewerModel {
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: talk, format: .markdown, name: "t.md"), width: width, height: 10)
        let install = try #require(model.layout?.row(for: Anchor(id: "install", fraction: 0)))
        for _ in 0...(install + 2) { _ = update(&model, .key(.character("j"))) }
        try #require(model.layout?.section(atRow: model.top).map { model.layout!.document.blocks[$0].id } == "install")
        return model
    }

    /// The section shows at every width; the title is shortened first, with `…`.
    @Test(arguments: [20, 40, 80, 120])
    func theHeaderKeepsTheSection(width: Int) throws {
        let model = try Self.inInstall(width: width)
        let line = header(model)
        #expect(DisplayWidth.of(line) <= width, "\(width): \(line)")
        #expect(line.hasSuffix("Install"), "\(width): \(line)")
        if width >= 80 { #expect(line == " The Presenter's Hour: What Newcomers Trip On › Install") }
        if width == 40 { #expect(line.hasPrefix(" The Presenter") && line.contains("… › Install"), "the title shortened: \(line)") }
        if width == 20 { #expect(line.contains("…") && line.hasSuffix(" › Install"), "\(line)") }
        #expect(view(model).lines[0].contains("Install"))
    }

    /// A heading wider than the screen is shortened itself, never pushed off by the title.
    @Test func aHeadingWiderThanTheScreenIsShortened() throws {
        let text = "# Title\n\n" + (1...12).map { "Line \($0)." }.joined(separator: "\n\n") + "\n\n## A section heading far too long for the screen\n\n"
            + (1...12).map { "More \($0)." }.joined(separator: "\n\n")
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: text, format: .markdown, name: "t.md"), width: 20, height: 8)
        _ = update(&model, .key(.character("G")))
        let line = header(model)
        #expect(line == " A section heading…", "\(line)")
    }

    /// A code line broken at the width marks each continuation row with `↪` in its gutter
    /// (dim); a line that fits has none, and the rows are as many as before.
    @Test(arguments: [40, 80, 120])
    func wrappedCodeIsMarked(width: Int) throws {
        let layout = Layout(document: Document(text: sample, format: .markdown, name: "g"), width: width)
        let code = try #require(layout.document.blocks.firstIndex { $0.kind == .code })
        let rows = layout.rows.filter { $0.block == code && $0.style == .code }
        let lineWidth = DisplayWidth.of(layout.document.blocks[code].text)
        #expect(rows.count == (lineWidth + width - 3) / (width - 2), "\(width): \(rows.map(\.text))")
        #expect(rows[0].text.hasPrefix("  let code"))
        #expect(rows.dropFirst().allSatisfy { $0.text.hasPrefix("↪ ") }, "\(width): \(rows.map(\.text))")
        #expect(rows.allSatisfy { DisplayWidth.of($0.text) <= width })
        if width == 120 { #expect(rows.count == 1) }
        var model = ViewerModel.follower(room: "r", localDocument: layout.document, width: width, height: 40)
        _ = update(&model, .key(.character("g")))
        if rows.count > 1 { #expect(view(model).lines.contains { $0.hasPrefix("\u{1B}[2m↪\u{1B}[0m\u{1B}[36m") }, "the mark is dim") }
    }
}

/// Issue 47.12: `h` or F1 shows the keys over the document; any key hides them.
@Suite("Help over the document")
struct HelpTests {
    @Test(arguments: [20, 40, 80, 120])
    func hShowsTheKeysAndAnyKeyHidesThem(width: Int) {
        var model = ViewerModel.presenter(room: "r", name: "g.md", format: .markdown, text: sample, width: width, height: 50)
        let before = view(model)
        #expect(update(&model, .key(.character("h"))).isEmpty)
        let shown = view(model).lines.map(StatusLineTests.plain)
        let text = shown.joined(separator: "\n")
        for key in ["t ", "f ", "q ", "h F1"] { #expect(text.contains("│ \(key)"), "\(width): \(key) in\n\(text)") }
        #expect(shown.contains { $0.hasPrefix(" └") && $0.contains("┘") }, "the frame is whole: \(text)")
        #expect(text.contains("take control") && text.contains("follow the"))
        #expect(shown.allSatisfy { DisplayWidth.of($0) == width }, "\(width): every row fits")
        #expect(shown.last == StatusLineTests.plain(before.lines.last!), "the status line stays")
        let top = model.top
        #expect(update(&model, .key(.character("G"))).isEmpty)
        #expect(!model.showingHelp && model.top == top, "the key that hides the help does nothing else")
        #expect(view(model) == before)
        _ = update(&model, .key(.f1))
        #expect(model.showingHelp)
        #expect(update(&model, .key(.interrupt)) == [.quit], "Ctrl-C still quits")
    }

    @Test func followersAreNotOfferedTakingControl() {
        var model = ViewerModel.follower(room: "r", localDocument: nil, width: 80, height: 30)
        _ = update(&model, .key(.character("h")))
        let text = view(model).lines.joined()
        #expect(text.contains("follow the presenter again") && !text.contains("take control"))
    }

    @Test func f1IsDecoded() {
        #expect(KeyDecoder.decode([0x1B, 0x4F, 0x50]) == [.f1])
        #expect(KeyDecoder.decode(Array("\u{1B}[11~h".utf8)) == [.f1, .character("h")])
    }
}
