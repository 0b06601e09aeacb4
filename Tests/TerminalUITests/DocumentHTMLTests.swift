import Testing
@testable import Documents

/// The browser viewer's HTML (issue 21): the same blocks and ids as the terminal, every
/// character of the document escaped, inline styles as elements, nothing inline that the
/// page's Content-Security-Policy would refuse.
@Suite("Document as HTML")
struct DocumentHTMLTests {
    @Test func blocksAreElementsWithTheirIds() {
        let document = Document(text: "# Guide\n\nIntro **bold**\n\n- one\n  - two\n\n```\nx < y\n```", format: .markdown, name: "g")
        let html = DocumentHTML.render(document)
        for block in document.blocks { #expect(html.contains("id=\"\(block.id)\""), "\(block.id) in \(html)") }
        #expect(html.contains("<h1 id=\"guide\""))
        #expect(html.contains("<strong>bold</strong>"))
        #expect(html.contains("<code>x &lt; y</code>"))
        #expect(html.contains("class=\"block item depth-1\""))
        #expect(!html.contains("style="), "no inline style: the CSP allows none")
    }

    @Test(arguments: ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "\"><svg onload=alert(1)>", "[x](javascript:alert(1))", "' onmouseover='alert(1)"])
    func theDocumentsTextIsNeverMarkup(_ hostile: String) {
        let html = DocumentHTML.render(Document(text: "# \(hostile)\n\n\(hostile)\n\n- \(hostile)\n\n> \(hostile)\n\n| \(hostile) | b |\n|---|---|\n| c | d |", format: .markdown, name: "h"))
        for forbidden in ["<script", "<img", "<svg", "<a ", "onerror=\"", "' onmouseover='"] {
            #expect(!html.contains(forbidden), "\(forbidden) in \(html)")
        }
    }

    /// Highlighted code (issue 47.13): the tokens as spans of the highlighter's classes, the
    /// code's text escaped inside them, a document's own markup and markers never spans.
    @Test func codeTokensAreSpansOfEscapedText() {
        let document = Document(text: "```swift\nlet s = \"<script>alert(1)</script>\" // <b>\u{E008}x\u{E009}</b>\n```", format: .markdown, name: "c")
        let html = DocumentHTML.render(document)
        #expect(html.contains("<pre id=\"top.1\" class=\"block\" data-language=\"swift\"><code><span class=\"tok-keyword\">let</span> s = "), "\(html)")
        #expect(html.contains("<span class=\"tok-string\">&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;</span>"))
        #expect(html.contains("<span class=\"tok-comment\">// &lt;b&gt;\u{FFFD}x\u{FFFD}&lt;/b&gt;</span>"))
        #expect(!html.contains("<script") && !html.contains("<b>"))
        let classes = html.split(separator: "class=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(Set(classes).isSubset(of: ["block", "tok-keyword", "tok-string", "tok-comment"]), "\(classes)")
    }
}
