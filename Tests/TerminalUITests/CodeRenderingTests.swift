import Testing
import TextSafety
@testable import TerminalUI

/// Issue 47.13 in the terminal: highlighted code as the renderer writes it, at 40 and 80
/// columns, with a hostile document's escapes in code blocks.
@Suite("Highlighted code in the terminal")
struct CodeRenderingTests {
    static let code = """
        # Code

        ```swift
        // A comment
        let greeting = "hello, world" + String(42)
        ```

        ```
        let plain = 1
        ```
        """

    static func model(_ text: String, width: Int, height: Int = 20) -> ViewerModel {
        ViewerModel.presenter(room: "r", name: "code.md", format: .markdown, text: text, width: width, height: height)
    }

    /// Every screen of the document, from the top to the bottom a page at a time.
    static func screens(_ text: String, width: Int) -> [[String]] {
        var model = Self.model(text, width: width)
        var out = [view(model).lines]
        while model.top < model.maxTop {
            _ = update(&model, .key(.pageDown))
            out.append(view(model).lines)
        }
        return out
    }

    /// `line` without the renderer's SGR sequences; nil when it holds an escape that is
    /// not one of them (the only escapes a screen line may hold).
    static func withoutSGR(_ line: String) -> String? {
        let allowed: Set<String> = ["0", "1", "2", "3", "4", "7", "31", "32", "35", "36"]
        var out = String.UnicodeScalarView()
        var scalars = line.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            guard scalar == "\u{1B}" else { out.append(scalar); continue }
            guard scalars.popFirst() == "[" else { return nil }
            let parameter = String(String.UnicodeScalarView(scalars.prefix { $0 != "m" }))
            guard allowed.contains(parameter) else { return nil }
            scalars = scalars.dropFirst(parameter.unicodeScalars.count + 1)
        }
        return String(out)
    }

    @Test func tokensShowInColourAndUnknownCodeStaysCyan() {
        let lines = view(Self.model(Self.code, width: 80)).lines
        let shown = lines.joined(separator: "\n")
        #expect(shown.contains(ANSI.dim + ANSI.italic + "// A comment"), "\(shown.debugDescription)")
        #expect(shown.contains(ANSI.bold + ANSI.magenta + "let"))
        #expect(shown.contains(ANSI.green + "\"hello, world\""))
        #expect(shown.contains(ANSI.cyan + "String"))
        #expect(shown.contains(ANSI.red + "42"))
        #expect(shown.contains(ANSI.cyan + "  let plain = 1"), "a fence without a language: cyan as before")
        #expect(!shown.contains(ANSI.magenta + "let plain"))
    }

    /// A string that runs over a wrap point keeps its colour on the continuation row (after
    /// the `↪`), and every row is as wide as the terminal, no wider.
    @Test(arguments: [40, 80])
    func wrappedTokensKeepTheirStyleAndWidth(_ width: Int) throws {
        let long = "let s = \"" + String(repeating: "wide 字 ", count: 20) + "\" // end"
        let text = "# Wide\n\n```swift\n\(long)\n```\n\n```python\nx = 1  # " + String(repeating: "comment ", count: 12) + "\n```\n"
        let model = Self.model(text, width: width, height: 40)
        let layout = try #require(model.layout)
        let code = layout.rows.enumerated().filter { $0.element.style == .code }
        #expect(code.count > 2, "the lines wrap at \(width)")
        for (_, row) in code { #expect(DisplayWidth.of(row.text) <= width, "\(row.text)") }
        let first = try #require(code.first { $0.element.text.contains("let") }?.offset)
        let rows = code.filter { $0.element.block == layout.rows[first].block }.map { InlineMarkup.plain($0.element.text) }
        #expect(rows.map { $0.dropFirst(2) }.joined() == long, "the rows hold the line, cut at the width")

        let lines = view(model).lines
        for line in lines {
            let plain = try #require(Self.withoutSGR(line), "only SGR in \(line.debugDescription)")
            #expect(DisplayWidth.of(plain) == width, "\(plain)")
        }
        var continuations = 0
        for (index, row) in layout.rows.enumerated() where row.text.hasPrefix(Layout.continuation) {
            continuations += 1
            let line = lines[1 + index]  // the header is the first line; the view is at the top
            let colour = layout.document.blocks[row.block].language == "swift" ? ANSI.green : ANSI.dim + ANSI.italic
            #expect(line.hasPrefix(ANSI.dim + Layout.continuation + ANSI.reset + " " + ANSI.reset + colour),
                    "the continuation goes on in the token's colour: \(line.debugDescription)")
        }
        #expect(continuations >= 2)
    }

    /// Issue 17.1's hostile text inside highlighted code (strings, comments, plain): every
    /// escape on screen is one of the renderer's own SGR sequences; the document's show as text.
    @Test(arguments: [40, 80])
    func hostileCodeAddsNoEscape(_ width: Int) {
        let hostile = "\u{1B}]52;c;cm0gLXJmIH4=\u{07} \u{1B}]8;;https://evil.example\u{07}x\u{1B}]8;;\u{07} \u{1B}[2J \u{1B}[6n \u{9B}31m \u{85}"
            + " \u{202E}evil\u{202C} \u{2066}iso\u{2069} \u{7F} \u{E008}forged\u{E009}"
        let blocks = ["swift", "python", "js", "sh", "sql", "json", "yaml", "diff", "c", "klingon"].map { language in
            "```\(language)\nlet a = \"\(hostile)\" // \(hostile)\n/* \(hostile)\n\(hostile) */ \(hostile) '\(hostile)'\n+\(hostile)\n```"
        }
        let text = "# Hostile \(hostile)\n\n" + blocks.joined(separator: "\n\n")
        let screens = Self.screens(text, width: width)
        #expect(screens.count > 3)
        var shown = ""
        for line in screens.joined() {
            guard let plain = Self.withoutSGR(line) else {
                Issue.record("an escape beyond the renderer's SGR: \(line.debugDescription)")
                continue
            }
            shown += plain
            let forbidden = plain.unicodeScalars.filter {
                $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value)
            }
            #expect(forbidden.isEmpty, "\(forbidden.map(\.value)) in \(plain)")
            #expect(DisplayWidth.of(plain) == width)
        }
        #expect(shown.contains("\u{241B}[2J") && shown.contains("\u{241B}]52;c;"), "the escapes show as their pictures")
        #expect(!shown.unicodeScalars.contains(where: InlineMarkup.isMarker), "no marker reaches the screen")
    }
}
