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
        /// Fenced code in a language `CodeHighlighter` knows: its canonical name (`python` for
        /// `py`), and the text holds the tokens' markers (`InlineMarkup.Style.keyword`, …).
        public var language: String?
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
            case .code: Self.highlighted(body, language: rawBlock.language)
            case .table: body.split(separator: "\n", omittingEmptySubsequences: false).map { row in
                row.split(separator: "\t", omittingEmptySubsequences: false).map { InlineMarkup.parse(String($0)) }.joined(separator: "\t")
            }.joined(separator: "\n")
            default: InlineMarkup.parse(body)
            }
            blocks.append(Block(id: id, kind: kind, text: shown, section: section, depth: rawBlock.depth, alignments: rawBlock.alignments,
                                language: rawBlock.language, joinsNext: rawBlock.joinsNext, ruleAfter: rawBlock.ruleAfter))
        }
        self.blocks = blocks
        title = blocks.first { if case .heading(1) = $0.kind { true } else { false } }.map { InlineMarkup.plain($0.text) } ?? SafeText.display(name)
    }

    /// Code with its tokens marked, when its language is known.
    private static func highlighted(_ code: String, language: String?) -> String {
        guard let language, var highlighter = CodeHighlighter(info: language) else { return code }
        return highlighter.marked(code)
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
        /// Fenced code: the canonical name of its info string's language, when known.
        var language: String?
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

    /// Markdown's blocks: CommonMark's block tree (`MarkdownParser`) flattened as PROTOCOL.md
    /// §7 says. Headings, paragraphs, code and tables are blocks; an HTML block is a
    /// paragraph of its lines; a quote is one block of all it contains; a list item is one
    /// block of its own content, followed by the items of the lists nested in it; a thematic
    /// break is a rule after the block before it.
    static func markdownBlocks(_ text: String) -> [RawBlock] {
        var blocks = [RawBlock]()
        flatten(MarkdownParser.parse(text).children, into: &blocks, depth: 0, column: 0)
        return blocks
    }

    private static func flatten(_ nodes: [MarkdownNode], into blocks: inout [RawBlock], depth: Int, column: Int) {
        for node in nodes {
            switch node.kind {
            case .thematicBreak:
                if !blocks.isEmpty { blocks[blocks.count - 1].ruleAfter = true }
            case .indentedCode:
                blocks.append(RawBlock(.code, node.lines.joined(separator: "\n")))
            case .fencedCode(_, _, _, let info):
                var block = RawBlock(.code, node.lines.joined(separator: "\n"))
                block.language = CodeLanguage.named(info)?.name
                blocks.append(block)
            case .table(let alignments):
                var block = RawBlock(.table, node.lines.joined(separator: "\n"))
                block.alignments = alignments
                blocks.append(block)
            case .heading(let level):
                blocks.append(RawBlock(.heading(level: level), text(of: node)))
            case .quote:
                blocks.append(RawBlock(.quote, text(of: node)))
            case .list(let style):
                for (index, item) in node.children.enumerated() {
                    let glyph = style.bullet == nil ? "\(style.start + index)\(style.delimiter ?? ".")" : ["•", "◦", "▪"][depth % 3]
                    var block = RawBlock(.listItem(marker: String(repeating: " ", count: column) + glyph),
                                         item.children.filter { !$0.isList }.map(text(of:)).filter { !$0.isEmpty }.joined(separator: " "))
                    block.depth = depth
                    let nested = item.children.filter(\.isList)
                    block.joinsNext = node.isTight && !nested.isEmpty
                    blocks.append(block)
                    flatten(nested, into: &blocks, depth: depth + 1, column: column + DisplayWidth.of(glyph) + 1)
                    if node.isTight, index + 1 < node.children.count { blocks[blocks.count - 1].joinsNext = true }
                }
            default:
                blocks.append(RawBlock(.paragraph, text(of: node)))
            }
        }
    }

    /// A block's text as one line: a paragraph's lines, a container's blocks (an item in a
    /// quote with its marker), joined by spaces.
    private static func text(of node: MarkdownNode) -> String {
        switch node.kind {
        case .list(let style):
            return node.children.enumerated().map { index, item in
                let glyph = style.bullet == nil ? "\(style.start + index)\(style.delimiter ?? ".")" : "•"
                return ([glyph] + [text(of: item)].filter { !$0.isEmpty }).joined(separator: " ")
            }.joined(separator: " ")
        case .quote, .item, .document:
            return node.children.map(text(of:)).filter { !$0.isEmpty }.joined(separator: " ")
        case .table:
            return node.lines.joined(separator: " ").split(separator: "\t").joined(separator: " ")
        default:
            return node.lines.map { $0.trimmingSpaces() }.filter { !$0.isEmpty }.joined(separator: " ")
        }
    }
}
