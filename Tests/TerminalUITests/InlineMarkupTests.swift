import ScrollModel
import Testing
@testable import TerminalUI

/// Emphasis, strong, code spans and links are styles on screen, not raw markup (issue 18.7).
@Suite("Inline markup")
struct InlineMarkupTests {
    /// Markers written as readable tags, for comparing.
    static func tagged(_ text: String) -> String {
        var out = ""
        for scalar in InlineMarkup.parse(text).unicodeScalars {
            switch scalar.value {
            case 0xE000: out += "<b>"
            case 0xE001: out += "</b>"
            case 0xE002: out += "<i>"
            case 0xE003: out += "</i>"
            case 0xE004: out += "<code>"
            case 0xE005: out += "</code>"
            case 0xE006: out += "<dim>"
            case 0xE007: out += "</dim>"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    @Test(arguments: [
        ("plain text", "plain text"),
        ("a **strong** word", "a <b>strong</b> word"),
        ("an *emphasised* and _also_ word", "an <i>emphasised</i> and <i>also</i> word"),
        ("__strong__ too", "<b>strong</b> too"),
        ("run `swift build -c release` now", "run <code>swift build -c release</code> now"),
        ("`**not bold**`", "<code>**not bold**</code>"),
        ("see [the guide](https://example.org/g) first", "see the guide<dim> (https://example.org/g)</dim> first"),
        ("2 * 3 * 4 = 24", "2 * 3 * 4 = 24"),
        ("snake_case_name stays", "snake_case_name stays"),
        ("an *unclosed star", "an *unclosed star"),
        ("**bold *and italic* inside**", "<b>bold <i>and italic</i> inside</b>"),
        ("\\*literal\\*", "*literal*"),
    ])
    func parses(_ source: String, _ expected: String) {
        #expect(Self.tagged(source) == expected)
    }

    /// A document cannot forge a marker: the scalars are replaced before parsing.
    @Test func markersCannotComeFromTheDocument() {
        let document = Document(text: "x\u{E000}bold?\u{E001}", format: .markdown, name: "d")
        #expect(!document.blocks[0].text.unicodeScalars.contains { InlineMarkup.isMarker($0) })
    }

    @Test func stylesRenderAndTakeNoColumns() throws {
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: "# The *title*\n\nSome **bold** and `code`.", format: .markdown, name: "d"),
                                         width: 40, height: 8)
        _ = update(&model, .connection(.connected))
        let lines = view(model).lines
        let body = lines.first { $0.contains("bold") } ?? ""
        #expect(body.contains("\u{1B}[1mbold") && body.contains("\u{1B}[36mcode"), "\(body.debugDescription)")
        #expect(!lines.joined().contains("**") && !lines.joined().contains("`"), "no raw markup on screen")
        #expect(lines[0].contains("The title"), "the title is plain in the header: \(lines[0].debugDescription)")
        let layout = try #require(model.layout)
        #expect(layout.document.blocks.first?.id == "the-title", "ids come from the source text")
        let row = try #require(layout.rows.first { $0.text.contains("bold") })
        #expect(DisplayWidth.of(row.text) == "Some bold and code.".count, "markers take no columns")
    }

    /// A style over a wrap point goes on on the next row (the row alone would show it plain).
    @Test func aStyleThatWrapsGoesOnOnTheNextRow() throws {
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: "Plain **bold words that run over the end of the row** plain.", format: .markdown, name: "d"),
                                         width: 20, height: 8)
        _ = update(&model, .connection(.connected))
        let rows = try #require(model.layout?.rows)
        #expect(rows.count >= 3)
        let lines = view(model).lines
        for (index, row) in rows.enumerated() where index > 0 && !InlineMarkup.plain(row.text).hasPrefix("plain") {
            #expect(lines[1 + index].hasPrefix(ANSI.reset + ANSI.bold), "row \(index) stays bold: \(lines[1 + index].debugDescription)")
        }
    }
}

