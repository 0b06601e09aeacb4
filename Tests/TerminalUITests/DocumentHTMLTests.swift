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
}
