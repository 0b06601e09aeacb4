import TextSafety
import ScrollModel

/// A document as blocks with stable ids: heading slugs (a repeated heading gets `-1`,
/// `-2`, …), and `section.N` for the N-th block of a section (`top.N` before the first
/// heading; slugs never contain a dot, so the two kinds never collide). The same id names the same
/// place at every terminal width.
public struct Document: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case heading(level: Int)
        case paragraph
        case listItem(marker: String)
        case quote
        case code
        /// A table: its text is the rows separated by newlines, each row's cells by tabs (the
        /// document's own tabs were expanded before parsing, so neither comes from a cell).
        case table
    }

    /// How a table column's cells line up (`:--`, `:-:`, `--:` in the delimiter row).
    public enum ColumnAlignment: Sendable, Equatable {
        case none, left, center, right
    }

    public struct Block: Sendable, Equatable {
        public var id: String
        public var kind: Kind
        public var text: String
        /// Index of the heading block of this block's section (nil before the first heading).
        public var section: Int?
        /// List items: how deep in nested lists (0 for a top-level item).
        public var depth = 0
        /// Tables: each column's alignment.
        public var alignments: [ColumnAlignment] = []
        /// An item of a tight list (no blank line between its items) that another item of
        /// that list follows: renderers leave no gap after it.
        public var joinsNext = false
        /// A thematic break (`---`) follows the block: renderers draw a rule after it. A break
        /// is no block of its own, so that it names no place and moves no id.
        public var ruleAfter = false
    }

    public var title: String
    public var blocks: [Block]
    public var fingerprint: String

    /// Parses Markdown (headings, paragraphs, lists, block quotes, fenced code) or plain
    /// text (paragraphs separated by blank lines).
    public init(text: String, format: SharedDocument.Format, name: String) {
        fingerprint = Fingerprint.of(text)
        // Text from the network: controls become pictures before anything measures or shows
        // it, and the scalars that mark inline styles (`InlineMarkup`) cannot come from it.
        let text = String(String.UnicodeScalarView(SafeText.document(text).unicodeScalars.map { InlineMarkup.isMarker($0) ? "\u{FFFD}" : $0 }))
        let raw = format == .markdown ? Self.markdownBlocks(text) : Self.plainBlocks(text)
        var blocks = [Block]()
        // `top` names the blocks before the first heading, so no heading may take it.
        var used: Set<String> = ["top"]
        var section: Int?
        var sectionSlug = "top"
        var number = 0
        for rawBlock in raw {
            let (kind, body) = (rawBlock.kind, rawBlock.text)
            var id: String
            if case .heading = kind {
                let base = Self.slug(body)
                id = base
                var count = 0
                while used.contains(id) {
                    count += 1
                    id = "\(base)-\(count)"
                }
                used.insert(id)
                section = blocks.count
                sectionSlug = id
                number = 0
            } else {
                number += 1
                id = "\(sectionSlug).\(number)"
            }
            // Ids come from the source text (PROTOCOL.md §7); the block shows its markup as styles.
            let shown: String = switch kind {
            case .code: body
            case .table: body.split(separator: "\n", omittingEmptySubsequences: false).map { row in
                row.split(separator: "\t", omittingEmptySubsequences: false).map { InlineMarkup.parse(String($0)) }.joined(separator: "\t")
            }.joined(separator: "\n")
            default: InlineMarkup.parse(body)
            }
            blocks.append(Block(id: id, kind: kind, text: shown, section: section, depth: rawBlock.depth, alignments: rawBlock.alignments,
                                joinsNext: rawBlock.joinsNext, ruleAfter: rawBlock.ruleAfter))
        }
        self.blocks = blocks
        title = blocks.first { if case .heading(1) = $0.kind { true } else { false } }.map { InlineMarkup.plain($0.text) } ?? SafeText.display(name)
    }

    /// GitHub-style slug, scalar by scalar (PROTOCOL.md §7): letters, marks and numbers kept
    /// in lower case, spaces and hyphens as hyphens, everything else (a dot included) left
    /// out; "section" when nothing is left. By scalars, not characters: a letter that joins
    /// the next character into one grapheme (U+0D4E before ".") must not bring a dot in.
    public static func slug(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                 .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber:
                out += String(scalar).lowercased()
            case .spaceSeparator where scalar == " ", .dashPunctuation where scalar == "-":
                out.append("-")
            default:
                break
            }
        }
        return out.isEmpty ? "section" : out
    }

    /// A block as the parser finds it, before it gets an id.
    struct RawBlock {
        var kind: Kind
        var text: String
        /// List nesting (0 outside lists and for top-level items).
        var depth = 0
        /// Table columns' alignment from the delimiter row.
        var alignments: [ColumnAlignment] = []
        /// An item of a tight list followed by another item of it: no blank line between them.
        var joinsNext = false
        /// A thematic break follows the block.
        var ruleAfter = false

        init(_ kind: Kind, _ text: String) {
            self.kind = kind
            self.text = text
        }
    }

    private static func plainBlocks(_ text: String) -> [RawBlock] {
        var blocks = [RawBlock]()
        var lines = [String]()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingSpaces()
            if trimmed.isEmpty {
                if !lines.isEmpty { blocks.append(RawBlock(.paragraph, lines.joined(separator: " "))) }
                lines.removeAll()
            } else {
                lines.append(trimmed)
            }
        }
        if !lines.isEmpty { blocks.append(RawBlock(.paragraph, lines.joined(separator: " "))) }
        return blocks
    }

    /// Markdown's blocks by CommonMark's block rules, flattened to this renderer's blocks: up
    /// to three spaces of indentation before a block's start, four or more make indented code
    /// (which cannot interrupt a paragraph); ATX headings lose an optional closing run of `#`;
    /// setext underlines turn the paragraph above into a heading; fences close only with the
    /// same character at least as long; block quotes and list items take lazy continuation
    /// lines; an ordered item interrupts a paragraph only when it starts at 1; HTML is text.
    private static func markdownBlocks(_ text: String) -> [RawBlock] {
        var blocks = [RawBlock]()
        var paragraph = [String]()
        var quote = [String]()
        var fence: (mark: Character, length: Int, indent: Int, lines: [String])?
        var indented: [String]?
        /// An HTML block being read (CommonMark §4.6): its lines, and what ends it (nil: a
        /// blank line). It is shown as paragraph text.
        var html: (end: String?, lines: [String])?
        /// The quote's last line was paragraph text a following line may continue lazily
        /// (not a blank `>` line, not indented code inside the quote).
        var quoteLazy = false
        /// The columns where the open list items' content starts, outermost first: a line
        /// indented that far belongs to the item, and a marker that far in nests under it.
        var openItems = [Int]()
        /// The same items' content columns on screen (a marker's width and one space in from
        /// its parent's), where a nested item's marker is drawn.
        var shownColumns = [Int]()
        var blankSinceItem = false
        /// The items of the list being read (block indices), and whether a blank line came
        /// between two of them or inside one (a loose list: CommonMark spaces its items).
        var listRun = [Int]()
        var listLoose = false
        /// The rows of a table being read (its header first), and its columns' alignment.
        var table: [[String]]?
        var alignments = [ColumnAlignment]()
        func endTable() {
            guard let rows = table else { return }
            var block = RawBlock(.table, rows.map { $0.joined(separator: "\t") }.joined(separator: "\n"))
            block.alignments = alignments
            blocks.append(block)
            table = nil
        }
        func endIndented() {
            guard var lines = indented else { return }
            while lines.last?.allSatisfy({ $0 == " " }) == true { lines.removeLast() }
            blocks.append(RawBlock(.code, lines.joined(separator: "\n")))
            indented = nil
        }
        func flush() {
            if !paragraph.isEmpty { blocks.append(RawBlock(.paragraph, paragraph.joined(separator: " "))) }
            if !quote.isEmpty { blocks.append(RawBlock(.quote, quote.joined(separator: " "))) }
            paragraph.removeAll()
            quote.removeAll()
        }
        /// Ends the list being read: a tight one's items are drawn without gaps between them.
        func endList() {
            if !listLoose {
                for (index, next) in zip(listRun, listRun.dropFirst()) where next == index + 1 { blocks[index].joinsNext = true }
            }
            openItems.removeAll()
            shownColumns.removeAll()
            listRun.removeAll()
            listLoose = false
        }
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine)
            let indent = line.prefix { $0 == " " }.count
            let trimmed = line.trimmingSpaces()
            if var open = html {
                if open.end == nil && trimmed.isEmpty {
                    blocks.append(RawBlock(.paragraph, open.lines.filter { !$0.isEmpty }.joined(separator: " ")))
                    html = nil
                    continue
                }
                open.lines.append(trimmed)
                if let end = open.end, line.lowercased().contains(end) {
                    blocks.append(RawBlock(.paragraph, open.lines.filter { !$0.isEmpty }.joined(separator: " ")))
                    html = nil
                } else {
                    html = open
                }
                continue
            }
            if var open = fence {
                if indent < 4, let close = Self.fence(trimmed), close.mark == open.mark, close.length >= open.length, close.info.isEmpty {
                    blocks.append(RawBlock(.code, open.lines.joined(separator: "\n")))
                    fence = nil
                } else {
                    open.lines.append(String(line.dropFirst(min(indent, open.indent))))
                    fence = open
                }
                continue
            }
            if var lines = indented {
                if trimmed.isEmpty || indent >= 4 {
                    lines.append(String(line.dropFirst(min(indent, 4))))
                    indented = lines
                    continue
                }
                endIndented()
            }
            if table != nil {
                // GFM: the table goes on until a blank line or another block's start; a row
                // without pipes is a row of one cell.
                if !trimmed.isEmpty, indent < 4, !Self.startsBlock(trimmed) {
                    table?.append(Self.cells(trimmed))
                    continue
                }
                endTable()
            }
            if trimmed.isEmpty {
                // An item may begin with at most one blank line: an empty one followed by a
                // blank line ends there (what comes next is not its content).
                if !openItems.isEmpty, !blankSinceItem, paragraph.isEmpty, quote.isEmpty, blocks.last?.text.isEmpty == true,
                   case .listItem? = blocks.last?.kind {
                    openItems.removeLast()
                    shownColumns.removeLast()
                }
                flush()
                if !openItems.isEmpty { blankSinceItem = true }
                continue
            }
            // The deepest open list item this line is indented into, and the indentation past it.
            let container = openItems.last { $0 <= indent }
            let relative = indent - (container ?? 0)
            let listItem = relative < 4 ? Self.listItem(trimmed) : nil
            // Inside an open list item: a line indented to its content (or, with no blank line
            // between, any paragraph line) continues it (this renderer's item is one block); a
            // marker there nests (below).
            if !openItems.isEmpty, listItem == nil, paragraph.isEmpty, quote.isEmpty,
               container != nil || (!blankSinceItem && Self.continuesParagraph(trimmed, indent: indent)) {
                if blankSinceItem { listLoose = true }  // two blocks in one item
                blocks[blocks.count - 1].text += (blocks[blocks.count - 1].text.isEmpty ? "" : " ") + trimmed
                continue
            }
            // An HTML block (types 1–6 may interrupt a paragraph, 7 may not).
            if indent < 4, let end = Self.htmlBlockStart(trimmed, interrupting: !paragraph.isEmpty) {
                flush()
                endList()
                if let end = end, trimmed.lowercased().contains(end) {
                    blocks.append(RawBlock(.paragraph, trimmed))  // opened and closed on one line
                } else {
                    html = (end, [trimmed])
                }
                continue
            }
            if indent >= 4 && listItem == nil {
                if !paragraph.isEmpty { paragraph.append(trimmed) }  // indented code cannot interrupt a paragraph
                else if !quote.isEmpty && quoteLazy { quote.append(trimmed) }
                else {
                    flush()
                    endList()
                    indented = [String(line.dropFirst(4))]
                }
                continue
            }
            if let header = paragraph.last, header.contains("|"), Self.isTableDelimiter(trimmed),
               Self.cells(header).count == Self.cells(trimmed).count {
                // "| a | b |" then "|---|:--:|": the paragraph's last line is a table's header.
                paragraph.removeLast()
                flush()
                endList()
                table = [Self.cells(header)]
                alignments = Self.cells(trimmed).map { cell in
                    switch (cell.hasPrefix(":"), cell.hasSuffix(":")) {
                    case (true, true): .center
                    case (true, false): .left
                    case (false, true): .right
                    case (false, false): .none
                    }
                }
                continue
            }
            if let open = Self.fence(trimmed), open.mark == "~" || !open.info.contains("`") {
                flush()
                endList()
                fence = (open.mark, open.length, indent, [])
            } else if let level = Self.setextLevel(trimmed), !paragraph.isEmpty {
                // "Title\n=====" or "Title\n-----": the paragraph above is a heading.
                let text = paragraph.joined(separator: " ")
                paragraph.removeAll()
                blocks.append(RawBlock(.heading(level: level), text))
            } else if Self.isThematicBreak(trimmed) {
                flush()  // "---", "***", "___": a rule after the block before, not a block
                endList()
                if !blocks.isEmpty { blocks[blocks.count - 1].ruleAfter = true }
            } else if let (level, text) = Self.atxHeading(trimmed) {
                flush()
                endList()
                blocks.append(RawBlock(.heading(level: level), text))
            } else if trimmed.hasPrefix(">") {
                if !paragraph.isEmpty { flush() }
                endList()
                var content = trimmed.dropFirst()
                if content.first == " " { content = content.dropFirst() }
                // A heading in a quote is its text, an item its marker as shown and its text (the
                // quote is one block).
                let text = Self.quotedText(content.trimmingSpaces())
                if !text.isEmpty { quote.append(text) }
                else if quote.isEmpty { quote.append("") }
                // Lazy continuation needs paragraph text to continue: not after a blank `>`
                // line, nor after code indented inside the quote.
                quoteLazy = !text.isEmpty && content.prefix { $0 == " " }.count < 4
            } else if let (marker, body, width) = listItem,
                      paragraph.isEmpty || (!body.isEmpty && (marker == "•" || marker.hasPrefix("1") && marker.count == 2)) {
                flush()
                if blankSinceItem && !listRun.isEmpty { listLoose = true }
                // Nested in the open items whose content starts at or before its marker.
                let keep = openItems.filter { $0 <= indent }.count
                openItems.removeLast(openItems.count - keep)
                shownColumns.removeLast(shownColumns.count - keep)
                // `- - foo` is an item whose content starts with another item: each is one.
                var (marker, body, column) = (marker, body, indent + width)
                while true {
                    let depth = openItems.count
                    let shown = marker == "•" ? ["•", "◦", "▪"][depth % 3] : marker
                    let start = shownColumns.last ?? 0
                    let inner = Self.isThematicBreak(body) ? nil : Self.listItem(body)
                    var block = RawBlock(.listItem(marker: String(repeating: " ", count: start) + shown), inner == nil ? Self.itemText(body) : "")
                    block.depth = depth
                    listRun.append(blocks.count)
                    blocks.append(block)
                    openItems.append(column)
                    shownColumns.append(start + DisplayWidth.of(shown) + 1)
                    guard let (innerMarker, innerBody, innerWidth) = inner else { break }
                    (marker, body, column) = (innerMarker, innerBody, column + innerWidth)
                }
                blankSinceItem = false
            } else if !quote.isEmpty && quoteLazy {
                quote.append(trimmed)
            } else if paragraph.isEmpty, Self.isLinkReferenceDefinition(trimmed) {
                flush()
                // `[foo]: /url "title"` defines a link target: no block, no text (it cannot
                // interrupt a paragraph).
                endList()
            } else {
                if !quote.isEmpty { flush() }  // a quote that cannot continue lazily has ended
                paragraph.append(trimmed)
                endList()
            }
        }
        if let open = html { blocks.append(RawBlock(.paragraph, open.lines.filter { !$0.isEmpty }.joined(separator: " "))) }
        if let open = fence { blocks.append(RawBlock(.code, open.lines.joined(separator: "\n"))) }
        endIndented()
        endTable()
        flush()
        endList()
        return blocks.map { block in
            var block = block
            if block.kind != .code { block.text = block.text.trimmingSpaces() }
            return block
        }
    }

    /// Block-level HTML tag names (CommonMark §4.6, type 6).
    static let htmlBlockTags: Set<String> = [
        "address", "article", "aside", "base", "basefont", "blockquote", "body", "caption", "center", "col", "colgroup", "dd",
        "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset",
        "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hr", "html", "iframe", "legend", "li", "link", "main", "menu",
        "menuitem", "nav", "noframes", "ol", "optgroup", "option", "p", "param", "search", "section", "summary", "table", "tbody",
        "td", "tfoot", "th", "thead", "title", "tr", "track", "ul",
    ]

    /// Whether `line` starts an HTML block (CommonMark §4.6), and what ends it: `.some(nil)`
    /// a blank line, `.some(marker)` the first line containing the marker (lower case); nil
    /// for no HTML block. Type 7 (any lone tag) cannot interrupt a paragraph.
    static func htmlBlockStart(_ line: String, interrupting: Bool) -> String?? {
        guard line.hasPrefix("<") else { return nil }
        let lower = line.lowercased()
        for tag in ["script", "pre", "style", "textarea"] where lower.hasPrefix("<" + tag) {
            let after = lower.dropFirst(tag.count + 1).first
            if after == nil || after == " " || after == ">" || after == "\t" { return .some("</" + tag + ">") }
        }
        if lower.hasPrefix("<!--") { return .some("-->") }
        if lower.hasPrefix("<?") { return .some("?>") }
        if lower.hasPrefix("<![cdata[") { return .some("]]>") }
        if lower.hasPrefix("<!"), let letter = lower.dropFirst(2).first, letter.isASCII, letter.isLetter { return .some(">") }
        let name = lower.dropFirst(lower.hasPrefix("</") ? 2 : 1).prefix { $0.isASCII && ($0.isLetter || $0.isNumber) }
        let after = lower.dropFirst((lower.hasPrefix("</") ? 2 : 1) + name.count)
        if htmlBlockTags.contains(String(name)), after.isEmpty || after.hasPrefix(" ") || after.hasPrefix(">") || after.hasPrefix("/>") {
            return .some(nil)
        }
        // Type 7: one complete open or closing tag, alone on its line.
        guard !interrupting, !name.isEmpty, name.first!.isLetter, line.hasSuffix(">"), !line.dropFirst().contains("<") else { return nil }
        return .some(nil)
    }

    /// Whether a line starts a block other than a paragraph (it ends a table).
    private static func startsBlock(_ trimmed: String) -> Bool {
        !continuesParagraph(trimmed, indent: 0) || listItem(trimmed) != nil
    }

    /// An item's text: a heading in it is its text, a quote in it its quoted text (the item is
    /// one block).
    private static func itemText(_ body: String) -> String {
        if body.hasPrefix(">") { return quotedText(body.dropFirst().trimmingSpaces()) }
        return atxHeading(body)?.1 ?? body
    }

    /// A quote line's text as the quote shows it: a heading's text, an item's marker (as
    /// items show it) and text, else the line.
    private static func quotedText(_ line: String) -> String {
        if let (_, text) = atxHeading(line) { return text }
        if let (marker, body, _) = listItem(line), !isThematicBreak(line) { return "\(marker) \(body)" }
        return line
    }

    /// `[label]: destination` with an optional title in quotes or parentheses (CommonMark
    /// §4.7), on one line.
    static func isLinkReferenceDefinition(_ line: String) -> Bool {
        guard line.hasPrefix("["), let close = line.firstRange(of: "]:") else { return false }
        let label = line[line.index(after: line.startIndex)..<close.lowerBound]
        guard !label.trimmingSpaces().isEmpty, label.count <= 999, !label.contains("[") else { return false }
        let rest = line[close.upperBound...].trimmingSpaces()
        guard let destination = rest.split(separator: " ", maxSplits: 1).first, !destination.isEmpty else { return false }
        let title = rest.dropFirst(destination.count).trimmingSpaces()
        guard let open = title.first else { return true }
        let closing: Character = open == "(" ? ")" : open
        return "\"'(".contains(open) && title.count >= 2 && title.last == closing
    }

    /// A line that would continue a paragraph (lazily): not the start of another block.
    private static func continuesParagraph(_ trimmed: String, indent: Int) -> Bool {
        indent >= 4 || !(fence(trimmed) != nil || isThematicBreak(trimmed) || atxHeading(trimmed) != nil || trimmed.hasPrefix(">"))
    }

    /// A code fence: three or more backticks or tildes, and the info string after them.
    private static func fence(_ trimmed: String) -> (mark: Character, length: Int, info: String)? {
        guard let mark = trimmed.first, mark == "`" || mark == "~" else { return nil }
        let length = trimmed.prefix { $0 == mark }.count
        guard length >= 3 else { return nil }
        return (mark, length, trimmed.dropFirst(length).trimmingSpaces())
    }

    /// An ATX heading's level and text: 1 to 6 `#` then a space or the end of the line; a
    /// closing run of `#` after a space (or alone) is not part of the text.
    private static func atxHeading(_ trimmed: String) -> (Int, String)? {
        let hashes = trimmed.prefix { $0 == "#" }.count
        guard (1...6).contains(hashes) else { return nil }
        let rest = trimmed.dropFirst(hashes)
        guard rest.isEmpty || rest.first == " " else { return nil }
        let content = rest.trimmingSpaces()
        let open = content.reversed().drop { $0 == "#" }
        if open.isEmpty { return (hashes, "") }
        if open.first == " " { return (hashes, String(open.reversed()).trimmingSpaces()) }
        return (hashes, content)
    }

    /// A table row's cells: the line split at `|` (not at `\|`, which is a pipe in a cell),
    /// outer pipes dropped, each cell trimmed.
    static func cells(_ line: String) -> [String] {
        var inner = Substring(line)
        if inner.hasPrefix("|") { inner = inner.dropFirst() }
        if inner.hasSuffix("|") && !inner.hasSuffix("\\|") { inner = inner.dropLast() }
        var cells = [String]()
        var cell = ""
        var escaped = false
        for character in inner {
            if escaped {
                cell += character == "|" ? "|" : "\\" + String(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "|" {
                cells.append(cell.trimmingSpaces())
                cell = ""
            } else {
                cell.append(character)
            }
        }
        if escaped { cell += "\\" }
        cells.append(cell.trimmingSpaces())
        return cells
    }

    /// A table's delimiter row: cells of `-` with an optional `:` at either end (`|---|:--:|`).
    static func isTableDelimiter(_ line: String) -> Bool {
        guard line.contains("-"), line.contains("|") || line.hasPrefix(":") || line.hasPrefix("-") else { return false }
        return cells(line).allSatisfy { cell in
            let core = cell.drop { $0 == ":" }.reversed().drop { $0 == ":" }
            return !core.isEmpty && core.allSatisfy { $0 == "-" }
        }
    }

    /// 1 for a line of `=`, 2 for a line of `-` (a setext heading's underline).
    private static func setextLevel(_ line: String) -> Int? {
        guard let first = line.first, first == "=" || first == "-", line.allSatisfy({ $0 == first }) else { return nil }
        return first == "=" ? 1 : 2
    }

    /// Three or more of one of `-`, `*`, `_`, with spaces between allowed.
    private static func isThematicBreak(_ line: String) -> Bool {
        let marks = line.filter { $0 != " " }
        guard let first = marks.first, "-*_".contains(first), marks.count >= 3 else { return false }
        return marks.allSatisfy { $0 == first }
    }

    /// A list item's marker as shown, its text, and the width of the marker and the spaces
    /// after it (where the item's content starts): `-`, `+`, `*`, or 1–9 digits and `.` or
    /// `)`, then a space or the end of the line.
    private static func listItem(_ line: String) -> (String, String, Int)? {
        let marker: String
        if let first = line.first, "-+*".contains(first) {
            marker = String(first)
        } else {
            let digits = line.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 9, let delimiter = line.dropFirst(digits.count).first, delimiter == "." || delimiter == ")" else { return nil }
            marker = digits + String(delimiter)
        }
        let rest = line.dropFirst(marker.count)
        guard rest.isEmpty || rest.first == " " else { return nil }
        let spaces = rest.prefix { $0 == " " }.count
        // Five or more spaces after the marker: the content starts one space in (indented code).
        let width = marker.count + (spaces == 0 || spaces > 4 ? 1 : spaces)
        let shown = "-+*".contains(marker) ? "•" : marker
        return (shown, rest.trimmingSpaces(), width)
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" || last == "\r" { slice.removeLast() }
        return String(slice)
    }

    func trimmingCharacters(_ character: Character) -> String {
        var slice = Substring(self)
        while slice.last == character { slice.removeLast() }
        return slice.trimmingSpaces()
    }
}
