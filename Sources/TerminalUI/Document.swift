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

    public struct Block: Sendable, Equatable {
        public var id: String
        public var kind: Kind
        public var text: String
        /// Index of the heading block of this block's section (nil before the first heading).
        public var section: Int?
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
        for (kind, body) in raw {
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
            blocks.append(Block(id: id, kind: kind, text: shown, section: section))
        }
        self.blocks = blocks
        title = blocks.first { if case .heading(1) = $0.kind { true } else { false } }.map { InlineMarkup.plain($0.text) } ?? SafeText.display(name)
    }

    /// GitHub-style slug, scalar by scalar (PROTOCOL.md §7): letters, marks and numbers kept
    /// in lower case, spaces and hyphens as hyphens, everything else (a dot included) left
    /// out; "section" when nothing is left. By scalars, not characters: a letter that joins
    /// the next character into one grapheme (U+0D4E before ".") must not bring a dot in.
    static func slug(_ text: String) -> String {
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

    private static func plainBlocks(_ text: String) -> [(Kind, String)] {
        var blocks = [(Kind, String)]()
        var lines = [String]()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingSpaces()
            if trimmed.isEmpty {
                if !lines.isEmpty { blocks.append((.paragraph, lines.joined(separator: " "))) }
                lines.removeAll()
            } else {
                lines.append(trimmed)
            }
        }
        if !lines.isEmpty { blocks.append((.paragraph, lines.joined(separator: " "))) }
        return blocks
    }

    private static func markdownBlocks(_ text: String) -> [(Kind, String)] {
        var blocks = [(Kind, String)]()
        var paragraph = [String]()
        var quote = [String]()
        var code: [String]?
        /// The indentation of the open list items, outermost first.
        var listIndents = [Int]()
        /// The rows of a table being read (its header first).
        var table: [[String]]?
        func endTable() {
            guard let rows = table else { return }
            blocks.append((.table, rows.map { $0.joined(separator: "\t") }.joined(separator: "\n")))
            table = nil
        }
        func flush() {
            if !paragraph.isEmpty { blocks.append((.paragraph, paragraph.joined(separator: " "))) }
            if !quote.isEmpty { blocks.append((.quote, quote.joined(separator: " "))) }
            paragraph.removeAll()
            quote.removeAll()
        }
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine)
            let trimmed = line.trimmingSpaces()
            if var lines = code {
                if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                    blocks.append((.code, lines.joined(separator: "\n")))
                    code = nil
                } else {
                    lines.append(line)
                    code = lines
                }
                continue
            }
            if table != nil {
                if trimmed.contains("|") {
                    table?.append(Self.cells(trimmed))
                    continue
                }
                endTable()
            }
            if let header = paragraph.last, header.contains("|"), Self.isTableDelimiter(trimmed),
               Self.cells(header).count == Self.cells(trimmed).count {
                // "| a | b |" then "|---|:--:|": the paragraph's last line is a table's header.
                paragraph.removeLast()
                flush()
                table = [Self.cells(header)]
                continue
            }
            if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                flush()
                code = []
            } else if let level = Self.setextLevel(trimmed), !paragraph.isEmpty, quote.isEmpty {
                // "Title\n=====" or "Title\n-----": the paragraph above is a heading.
                let text = paragraph.joined(separator: " ")
                paragraph.removeAll()
                blocks.append((.heading(level: level), text))
            } else if Self.isThematicBreak(trimmed) {
                flush()  // "---", "***", "___": a break between blocks, not a block
            } else if trimmed.isEmpty {
                flush()
            } else if let level = Self.headingLevel(trimmed) {
                flush()
                blocks.append((.heading(level: level), trimmed.dropFirst(level).trimmingSpaces().trimmingCharacters("#")))
            } else if trimmed.hasPrefix(">") {
                if !paragraph.isEmpty { flush() }
                quote.append(trimmed.dropFirst().trimmingSpaces())
            } else if let (marker, body) = Self.listItem(trimmed) {
                flush()
                // Nesting by indentation: deeper than the item above, one level in; as deep
                // as an earlier item, that item's level (2- and 4-space styles both work).
                let indent = line.prefix { $0 == " " }.count
                while let last = listIndents.last, indent < last { listIndents.removeLast() }
                if listIndents.last.map({ indent > $0 }) ?? true { listIndents.append(indent) }
                let depth = min(listIndents.count - 1, 5)
                let shown = marker == "•" ? ["•", "◦", "▪"][depth % 3] : marker
                blocks.append((.listItem(marker: String(repeating: "  ", count: depth) + shown), body))
            } else if !quote.isEmpty {
                quote.append(trimmed)
            } else if case .listItem(let marker)? = blocks.last?.0, paragraph.isEmpty, line.hasPrefix("  ") {
                blocks[blocks.count - 1] = (.listItem(marker: marker), blocks[blocks.count - 1].1 + " " + trimmed)
            } else {
                paragraph.append(trimmed)
                listIndents.removeAll()
            }
        }
        if let lines = code { blocks.append((.code, lines.joined(separator: "\n"))) }
        endTable()
        flush()
        return blocks
    }

    /// A table row's cells: the line split at `|`, outer pipes dropped, each cell trimmed.
    static func cells(_ line: String) -> [String] {
        var inner = Substring(line)
        if inner.hasPrefix("|") { inner = inner.dropFirst() }
        if inner.hasSuffix("|") { inner = inner.dropLast() }
        return inner.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingSpaces() }
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

    private static func headingLevel(_ line: String) -> Int? {
        let hashes = line.prefix { $0 == "#" }.count
        guard (1...6).contains(hashes) else { return nil }
        let rest = line.dropFirst(hashes)
        return rest.isEmpty || rest.first == " " ? hashes : nil
    }

    private static func listItem(_ line: String) -> (String, String)? {
        for bullet in ["- ", "* ", "+ "] where line.hasPrefix(bullet) {
            return ("•", String(line.dropFirst(2)).trimmingSpaces())
        }
        let digits = line.prefix { $0.isASCII && $0.isNumber }
        if !digits.isEmpty, digits.count <= 9, line.dropFirst(digits.count).hasPrefix(". ") {
            return ("\(digits).", String(line.dropFirst(digits.count + 2)).trimmingSpaces())
        }
        return nil
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
