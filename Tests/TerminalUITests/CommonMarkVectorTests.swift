import Foundation
import ScrollModel
import Testing
import TextSafety
@testable import Documents

/// Every block example of the CommonMark 0.31.2 spec and GFM's table examples, with the blocks
/// PROTOCOL.md §7 cuts them into, from Protocol/vectors/commonmark-blocks.json. The vectors
/// were written by another CommonMark parser (markdown-it-py, checked against the spec's own
/// HTML by Scripts/make-commonmark-vectors), so this checks the reader against the spec.
@Suite("CommonMark block vectors (PROTOCOL.md §7)")
struct CommonMarkVectorTests {
    struct Example: Sendable, CustomTestStringConvertible {
        let number: Int
        let section: String
        let markdown: String
        let blocks: [String]
        var testDescription: String { "\(section) \(number): \(markdown.debugDescription)" }
    }

    static let examples: [Example] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Protocol/vectors/commonmark-blocks.json")
        guard let data = try? Data(contentsOf: url), let json = try? JSON.parse(String(decoding: data, as: UTF8.self)),
              case .array(let items)? = json["examples"] else { return [] }
        return items.compactMap { item in
            guard let number = item["example"]?.double, let section = item["section"]?.string, let markdown = item["markdown"]?.string,
                  case .array(let blocks)? = item["blocks"] else { return nil }
            return Example(number: Int(number), section: section, markdown: markdown, blocks: blocks.compactMap(\.string))
        }
    }()

    /// The blocks as the vectors write them: source text (inline markup as written) with
    /// white space runs as one space, code exactly.
    static func blocks(_ markdown: String) -> [String] {
        Document.markdownBlocks(SafeText.document(markdown)).map { block in
            switch block.kind {
            case .heading(let level): "h\(level) \(collapsed(block.text))"
            case .paragraph: "p \(collapsed(block.text))"
            case .code: "code \(block.text)"
            case .quote: "quote \(collapsed(block.text))"
            case .listItem(let marker): "li \(block.depth) \(marker.trimmingSpaces()) \(collapsed(block.text))"
            case .table: "table \(block.text)"
            }
        }
    }

    static func collapsed(_ text: String) -> String { text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }

    /// Tabs in code as this renderer shows them: spaces to the next multiple of four columns.
    static func expandingTabs(_ block: String) -> String {
        guard block.hasPrefix("code "), block.contains("\t") else { return block }
        return "code " + block.dropFirst(5).split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var out = ""
            for character in line {
                if character == "\t" { out += String(repeating: " ", count: 4 - out.count % 4) } else { out.append(character) }
            }
            return out
        }.joined(separator: "\n")
    }

    @Test func everyBlockExampleIsThere() {
        // The 297 examples of the spec's block sections and GFM's 8 tables.
        #expect(Self.examples.count >= 305)
        #expect(Set(Self.examples.map(\.section)).count == 15)
    }

    @Test(arguments: examples)
    func blocksMatch(_ example: Example) {
        #expect(Self.blocks(example.markdown) == example.blocks.map(Self.expandingTabs))
    }
}

extension CommonMarkVectorTests {
    /// Containers nest at most `MarkdownParser.maxDepth` deep: a line of 100,000 `>` or list
    /// markers is read without a frame per level, and what is deeper is text.
    @Test func nestingIsBounded() {
        let quotes = Document(text: String(repeating: ">", count: 100_000) + " deep", format: .markdown, name: "q").blocks
        #expect(quotes.count == 1)
        #expect(quotes.first?.kind == .quote)
        #expect(quotes.first?.text.hasSuffix("> deep") == true)
        let items = Document(text: (0..<200).map { String(repeating: " ", count: 2 * $0) + "- a" }.joined(separator: "\n"),
                             format: .markdown, name: "l").blocks
        #expect(items.count == MarkdownParser.maxDepth / 2, "deeper items are the deepest item's text")
        #expect(items.map(\.depth) == Array(0..<(MarkdownParser.maxDepth / 2)))
        let markers = Document(text: String(repeating: "- ", count: 50_000) + "x", format: .markdown, name: "m").blocks
        #expect(markers.count == MarkdownParser.maxDepth / 2)
        #expect(markers.last?.text.hasSuffix("- x") == true)
    }
}
