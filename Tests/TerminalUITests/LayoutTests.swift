import ScrollModel
import Testing
@testable import TerminalUI

let sample = """
# ScrollSync Guide

Intro paragraph that is long enough to wrap at forty columns and then some more words to be sure.

## Install

- first item with enough words to wrap around at a narrow width for sure
- second item

> A quote that also wraps when the terminal is narrow enough to make it wrap.

```
let code = "kept as is, long lines are broken at the width rather than wrapped by word"
```

## Install

日本語のテキストは二列ずつ使います。日本語のテキストは二列ずつ使います。 Café, naïve e\u{301}.

1. numbered
"""

@Suite("Document blocks and ids")
struct DocumentTests {
    @Test func blocksAndIds() {
        let document = Document(text: sample, format: .markdown, name: "guide.md")
        #expect(document.title == "ScrollSync Guide")
        #expect(document.blocks.map(\.id) == [
            "scrollsync-guide", "scrollsync-guide.1", "install", "install.1", "install.2", "install.3", "install.4",
            "install-1", "install-1.1", "install-1.2",
        ])
        #expect(Set(document.blocks.map(\.id)).count == document.blocks.count, "ids are unique")
        #expect(document.blocks[2].kind == .heading(level: 2))
        #expect(document.blocks[3].kind == .listItem(marker: "•"))
        #expect(document.blocks[5].kind == .quote)
        #expect(document.blocks[6].kind == .code)
        #expect(document.blocks[9].kind == .listItem(marker: "1."))
        #expect(document.blocks[4].section == 2)
    }

    @Test func plainTextParagraphs() {
        let document = Document(text: "one\ntwo\n\nthree\n", format: .text, name: "notes.txt")
        #expect(document.title == "notes.txt")
        #expect(document.blocks.map(\.text) == ["one two", "three"])
        #expect(document.blocks.map(\.id) == ["top.1", "top.2"])
    }
}

@Suite("Layout: wrapping and anchors")
struct LayoutTests {
    static let widths = [40, 80, 133]

    @Test(arguments: widths)
    func noRowIsWiderThanTheTerminal(_ width: Int) {
        let layout = Layout(document: Document(text: sample, format: .markdown, name: "g"), width: width)
        for row in layout.rows { #expect(DisplayWidth.of(row.text) <= width, "\(row.text)") }
    }

    @Test func displayWidths() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("日本") == 4)
        #expect(DisplayWidth.of("e\u{301}") == 1)
        #expect(DisplayWidth.of("👍") == 2)
        #expect(DisplayWidth.of("Café") == 4)
    }

    @Test func wideCharactersWrapByColumns() {
        let lines = Layout.wrap(String(repeating: "日", count: 30), width: 40)
        #expect(lines.map { DisplayWidth.of($0) } == [40, 20])
    }

    @Test(arguments: widths)
    func rowToAnchorToRowRoundTrips(_ width: Int) throws {
        let layout = Layout(document: Document(text: sample, format: .markdown, name: "g"), width: width)
        for row in 0..<layout.rowCount {
            let anchor = try #require(layout.anchor(atRow: row))
            #expect(layout.row(for: anchor) == row, "width \(width) row \(row) anchor \(anchor)")
        }
    }

    @Test func anchorsMapAcrossWidthsInsideTheSameBlock() throws {
        let document = Document(text: sample, format: .markdown, name: "g")
        let wide = Layout(document: document, width: 133)
        let narrow = Layout(document: document, width: 40)
        for row in 0..<narrow.rowCount {
            let anchor = try #require(narrow.anchor(atRow: row))
            let mapped = try #require(wide.row(for: anchor))
            #expect(wide.rows[mapped].block == narrow.rows[row].block, "same block at both widths")
            #expect(wide.section(atRow: mapped) == narrow.section(atRow: row))
        }
        // Interpolated, not snapped: half-way through a block in one layout is half-way in the other.
        let block = 1
        let narrowRows = narrow.rowCount(ofBlock: block)
        let anchor = Anchor(id: document.blocks[block].id, fraction: 0.5)
        #expect(try #require(narrow.row(for: anchor)) == narrow.blockStart[block] + Int((0.5 * Double(narrowRows)).rounded()))
    }

    @Test func headingsForSectionJumps() {
        let layout = Layout(document: Document(text: sample, format: .markdown, name: "g"), width: 80)
        let first = layout.headingRow(from: 0, forward: true)
        #expect(first == layout.blockStart[2])
        #expect(layout.headingRow(from: first!, forward: false) == 0)
    }
}

/// Findings of issue 22's fuzzing and Markdown a user expects (issue 18.7), one by one.
@Suite("Layout findings")
struct LayoutFindingTests {
    @Test func aZeroWidthFirstWordIsKept() {
        #expect(Layout.wrap("\u{200B} hello world", width: 40) == ["\u{200B} hello world"])
        #expect(Layout.wrap("\u{200B} hello world", width: 6) == ["\u{200B} hello", "world"])
        #expect(Layout.wrap("\u{200B} hello world", width: 5) == ["\u{200B}", "hello", "world"])
    }

    /// No row is wider than the terminal, whatever the list marker (a 10-column number at 10 columns).
    @Test(arguments: [10, 11, 12, 20])
    func longListMarkersFitTheWidth(width: Int) {
        let layout = Layout(document: Document(text: "123456789. 日\n\n1234567890123. two words here", format: .markdown, name: "l"), width: width)
        for row in layout.rows { #expect(DisplayWidth.of(row.text) <= layout.width, "\(row.text.debugDescription) at \(width)") }
        #expect(layout.rows.contains { $0.text.contains("日") })
    }

    @Test func setextHeadingsAndThematicBreaks() {
        let document = Document(text: "Title\n=====\n\nIntro\n\nPart two\n--------\n\nbody\n\n***\n\nafter", format: .markdown, name: "s")
        #expect(document.blocks.map(\.kind) == [.heading(level: 1), .paragraph, .heading(level: 2), .paragraph, .paragraph])
        #expect(document.blocks.map(\.id) == ["title", "title.1", "part-two", "part-two.1", "part-two.2"])
        #expect(document.title == "Title")
    }
}

@Suite("Nested lists")
struct NestedListTests {
    static func markers(_ text: String) -> [String] {
        Document(text: text, format: .markdown, name: "n").blocks.compactMap { if case .listItem(let marker) = $0.kind { marker } else { nil } }
    }

    @Test func nestingFollowsIndentation() {
        #expect(Self.markers("- a\n  - b\n    - c\n  - d\n- e") == ["•", "  ◦", "    ▪", "  ◦", "•"])
        #expect(Self.markers("- a\n    - b\n        - c\n- d") == ["•", "  ◦", "    ▪", "•"], "four-space style")
        #expect(Self.markers("1. one\n   - inner\n2. two") == ["1.", "   ◦", "2."], "under 1. the content starts three columns in")
        #expect(Self.markers("10. ten\n    - inner") == ["10.", "    ◦"])
    }

    @Test func nestedItemsAreIndentedOnScreen() {
        let layout = Layout(document: Document(text: "- outer item\n  - inner item that wraps on a narrow screen", format: .markdown, name: "n"), width: 24)
        let texts = layout.rows.map(\.text).filter { !$0.isEmpty }
        #expect(texts.first == "• outer item")
        #expect(texts.dropFirst().first?.hasPrefix("  ◦ inner") == true, "\(texts)")
        #expect(texts.dropFirst(2).allSatisfy { $0.hasPrefix("    ") }, "continuation rows hang under the text: \(texts)")
    }
}

@Suite("CJK line breaking")
struct CJKLineBreakingTests {
    /// No row starts with closing punctuation, at any width, and none is wider than the line.
    @Test(arguments: Array(4...24))
    func noLineStartsWithClosingPunctuation(width: Int) {
        let text = "日本語の文章です。句読点、特に「かぎかっこ」は、行頭に来てはいけません。これは試験です。"
        let lines = Layout.hardWrap(text, width: width)
        #expect(lines.joined() == text, "nothing lost or added")
        for line in lines.dropFirst() { #expect(!Layout.noLineStart.contains(line.first ?? "a"), "\(line) at \(width)") }
        for line in lines { #expect(DisplayWidth.of(line) <= max(2, width), "\(line) at \(width)") }
    }
}

@Suite("Tables")
struct TableTests {
    static let source = "| Name | Role |\n|---|:--:|\n| Ann | **presenter** |\n| Bo | follower |\n\nAfter."

    @Test func aTableIsOneBlockShownAsAlignedColumns() {
        let document = Document(text: Self.source, format: .markdown, name: "t")
        #expect(document.blocks.map(\.kind) == [.table, .paragraph])
        let layout = Layout(document: document, width: 40)
        let table = layout.rows.filter { $0.block == 0 && $0.style != .blank }.map { InlineMarkup.plain($0.text) }
        #expect(table == ["Name │   Role   ", "─────┼──────────", "Ann  │ presenter", "Bo   │ follower "], "the centred column (:--:): \(table)")
        #expect(Set(table.map { DisplayWidth.of($0) }).count == 1, "every row as wide as the others")
    }

    /// Too wide for the terminal: each row as its cells joined, wrapped, never wider than the line.
    @Test(arguments: [10, 12, 15])
    func aTableTooWideIsShownRowByRow(width: Int) {
        let layout = Layout(document: Document(text: Self.source, format: .markdown, name: "t"), width: width)
        let table = layout.rows.filter { $0.block == 0 && $0.style != .blank }
        #expect(!table.contains { $0.text.contains("│") })
        #expect(table.allSatisfy { DisplayWidth.of($0.text) <= layout.width })
        #expect(table.contains { InlineMarkup.plain($0.text).contains("Ann") })
    }

    @Test func pipesAloneAreNoTable() {
        #expect(Document(text: "a | b\n\nc", format: .markdown, name: "t").blocks.map(\.kind) == [.paragraph, .paragraph])
        #expect(Document(text: "x\n---", format: .markdown, name: "t").blocks.map(\.kind) == [.heading(level: 2)])
    }
}

/// Issue 27.10: Markdown as writers expect it (CommonMark 0.31.2, GFM tables).
@Suite("Markdown as writers expect it")
struct MarkdownExpectationTests {
    static func layout(_ text: String, width: Int = 40) -> [String] {
        Layout(document: Document(text: text, format: .markdown, name: "m"), width: width).rows.map(\.text)
    }

    @Test func aTightListHasNoBlankLinesBetweenItemsAndALooseOneHas() {
        #expect(Self.layout("- one\n- two\n- three\n\nAfter.") == ["• one", "• two", "• three", "", "After."])
        #expect(Self.layout("- one\n\n- two\n- three") == ["• one", "", "• two", "", "• three"], "one blank line makes the whole list loose")
        #expect(Self.layout("1. one\n   - a\n   - b\n2. two") == ["1. one", "   ◦ a", "   ◦ b", "2. two"])
    }

    @Test func aThematicBreakDrawsARuleWithoutBecomingABlock() {
        let document = Document(text: "First.\n\n---\n\nSecond.", format: .markdown, name: "m")
        #expect(document.blocks.map(\.id) == ["top.1", "top.2"], "ids do not move")
        #expect(Self.layout("First.\n\n---\n\nSecond.", width: 12) == ["First.", "", String(repeating: "─", count: 12), "", "Second."])
        let html = DocumentHTML.render(document)
        #expect(html.contains(#"id="top.1" class="block" data-rule-after"#), "\(html)")
    }

    @Test func tableColumnsAlignAsTheDelimiterRowSays() {
        let rows = Self.layout("| a | b | c |\n|:--|:-:|--:|\n| x | yy | zzz |\n| xxxx | y | z |")
        #expect(rows.prefix(4) == ["a    │ b  │   c", "─────┼────┼────", "x    │ yy │ zzz", "xxxx │ y  │   z"], "\(rows)")
        let html = DocumentHTML.render(Document(text: "| a | b |\n|---|--:|\n| 1 | 2 |", format: .markdown, name: "t"))
        #expect(html.contains(#"<th class="align-right">b</th>"#) && html.contains(#"<td>1</td>"#), "\(html)")
    }

    @Test func linkReferenceDefinitionsAreNeitherBlocksNorText() {
        let document = Document(text: "[foo]: /url \"title\"\n\n[foo]\n\n[bar]: https://example.org\nText.", format: .markdown, name: "m")
        #expect(document.blocks.map { InlineMarkup.plain($0.text) } == ["[foo]", "Text."])
        #expect(Document(text: "Para\n[foo]: /url", format: .markdown, name: "m").blocks.count == 1, "one cannot interrupt a paragraph")
    }

    @Test func anItemThatStartsWithAnItemIsTwoItems() {
        let markers = Document(text: "- - foo", format: .markdown, name: "m").blocks.map { ($0.kind, InlineMarkup.plain($0.text)) }
        #expect(markers.map(\.1) == ["", "foo"])
        #expect(markers.map(\.0) == [.listItem(marker: "•"), .listItem(marker: "  ◦")])
    }

    @Test func aHeadingInAQuoteOrAnItemIsItsText() {
        let texts = Document(text: "> # Foo\n> bar\n\n- ## Baz", format: .markdown, name: "m").blocks.map { InlineMarkup.plain($0.text) }
        #expect(texts == ["Foo bar", "Baz"])
    }

    @Test func tableCellsKeepEscapedPipesAndRowsWithoutPipesContinueTheTable() {
        let document = Document(text: "| f | g |\n|---|---|\n| a \\| b | c |\nbar\n\nbaz", format: .markdown, name: "m")
        #expect(document.blocks.count == 2)
        #expect(document.blocks[0].text == "f\tg\na | b\tc\nbar\t", "GFM examples 200 and 202 (a row has the header's cells): \(document.blocks[0].text.debugDescription)")
        #expect(Document(text: "| a |\n|---|\n| b |\n> quote", format: .markdown, name: "m").blocks.count == 2, "another block ends the table")
    }
}

extension MarkdownExpectationTests {
    @Test func htmlInsideAListItemStaysInTheItem() {
        let blocks = Document(text: "- item\n  <div>inside</div>\n- next", format: .markdown, name: "m").blocks.map { InlineMarkup.plain($0.text) }
        #expect(blocks == ["item <div>inside</div>", "next"])
    }
}

extension MarkdownExpectationTests {
    @Test func itemsInAQuoteAndAQuoteInAnItemShowAsTheyRender() {
        let texts = Document(text: "> - a\n> - b\n\n- > said", format: .markdown, name: "m").blocks.map { InlineMarkup.plain($0.text) }
        #expect(texts == ["• a • b", "said"])
    }
}
