/// A document as HTML for the browser viewer: one element per block, whose `id` is the
/// block's id (PROTOCOL.md §7), so that a browser finds the anchor a terminal sends and the
/// other way round. Every character of the document is escaped: no markup, script or link
/// from the document becomes HTML; inline styles become `strong`, `em` and `code`, a link
/// its text with the URL after it as text, a code token `<span class="tok-KIND">`.
public enum DocumentHTML {
    public static func render(_ document: Document) -> String {
        var html = ""
        for block in document.blocks {
            let id = escape(block.id)
            // Classes, not style attributes: the viewer's Content-Security-Policy allows no inline style.
            let section = (block.section.map { " data-section=\"\(escape(document.blocks[$0].id))\"" } ?? "")
                + (block.ruleAfter ? " data-rule-after=\"\"" : "") + (block.joinsNext ? " data-tight=\"\"" : "")
            switch block.kind {
            case .heading(let level):
                let tag = "h\(min(6, max(1, level)))"
                html += "<\(tag) id=\"\(id)\" class=\"block\"\(section)>\(inline(block.text))</\(tag)>\n"
            case .paragraph:
                html += "<p id=\"\(id)\" class=\"block\"\(section)>\(inline(block.text))</p>\n"
            case .listItem(let marker):
                let shown = marker.drop { $0 == " " }
                html += "<p id=\"\(id)\" class=\"block item depth-\(min(block.depth, 5))\"\(section)><span class=\"marker\">\(escape(String(shown)))</span> \(inline(block.text))</p>\n"
            case .quote:
                html += "<blockquote id=\"\(id)\" class=\"block\"\(section)>\(inline(block.text))</blockquote>\n"
            case .code:
                let language = block.language.map { " data-language=\"\(escape($0))\"" } ?? ""
                html += "<pre id=\"\(id)\" class=\"block\"\(section)\(language)><code>\(inline(block.text))</code></pre>\n"
            case .table:
                html += "<table id=\"\(id)\" class=\"block\"\(section)>"
                for (index, row) in block.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let cell = index == 0 ? "th" : "td"
                    html += "<tr>" + row.split(separator: "\t", omittingEmptySubsequences: false).enumerated().map { column, text in
                        let alignment = column < block.alignments.count ? block.alignments[column] : .none
                        let align = alignment == .none ? "" : " class=\"align-\(alignment)\""
                        return "<\(cell)\(align)>\(inline(String(text)))</\(cell)>"
                    }.joined() + "</tr>"
                }
                html += "</table>\n"
            }
        }
        return html
    }

    /// Text with its inline-markup markers as elements, everything else escaped.
    static func inline(_ text: String) -> String {
        var out = ""
        var open: [InlineMarkup.Style] = []
        for scalar in text.unicodeScalars {
            guard InlineMarkup.isMarker(scalar), let style = InlineMarkup.Style(rawValue: scalar.value & ~1) else {
                out += escape(scalar)
                continue
            }
            if scalar.value & 1 == 0 {
                open.append(style)
                out += opening(style)
            } else if let at = open.lastIndex(of: style) {
                // Close what was opened after it, then it, then open those again (well nested).
                let after = open[(at + 1)...]
                out += after.reversed().map(closing).joined() + closing(style) + after.map(opening).joined()
                open.remove(at: at)
            }
        }
        return out + open.reversed().map(closing).joined()
    }

    private static func opening(_ style: InlineMarkup.Style) -> String {
        switch style {
        case .strong: "<strong>"
        case .emphasis: "<em>"
        case .code: "<code>"
        case .link: "<small>"
        // The class names are the kinds' own, never the document's text.
        case .keyword, .string, .comment, .number, .type, .inserted, .deleted: "<span class=\"tok-\(CodeHighlighter.Kind(style).rawValue)\">"
        }
    }

    private static func closing(_ style: InlineMarkup.Style) -> String {
        switch style {
        case .strong: "</strong>"
        case .emphasis: "</em>"
        case .code: "</code>"
        case .link: "</small>"
        case .keyword, .string, .comment, .number, .type, .inserted, .deleted: "</span>"
        }
    }

    /// `text` safe in HTML text and in a double-quoted attribute.
    public static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars { out += escape(scalar) }
        return out
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "&": "&amp;"
        case "<": "&lt;"
        case ">": "&gt;"
        case "\"": "&quot;"
        case "'": "&#39;"
        default: String(scalar)
        }
    }
}
