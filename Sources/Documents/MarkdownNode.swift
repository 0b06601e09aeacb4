/// A block of Markdown's block tree as `MarkdownParser` builds it: its kind, the lines it
/// holds, the blocks it contains, and the lines it spans (which make a list loose or tight).
final class MarkdownNode {
    enum Kind {
        case document, quote, paragraph, thematicBreak, indentedCode
        case list(ListStyle)
        /// A list item; its content starts this many columns in from its container's.
        case item(contentColumn: Int)
        case heading(level: Int)
        /// Fenced code; `info` is the info string after the opening fence (`swift`, `js title=x`).
        case fencedCode(mark: Character, length: Int, indent: Int, info: String)
        /// What ends an HTML block: the first line containing one of `ends` (lower case), or
        /// a blank line when there are none.
        case html(ends: [String])
        case table(alignments: [Document.ColumnAlignment])
    }

    /// Bullet lists by their bullet character, ordered ones by their delimiter (`.` or `)`).
    struct ListStyle: Equatable {
        var bullet: Character?
        var delimiter: Character?
        var start = 1
    }

    var kind: Kind
    /// How many containers hold this block (the document's children: 1).
    var depth = 0
    var children: [MarkdownNode] = []
    weak var parent: MarkdownNode?
    var isOpen = true
    /// The lines the block holds (paragraphs, code, HTML), its text (headings) or its rows'
    /// cells joined by tabs (tables).
    var lines: [String] = []
    /// The first and the last line that held something of this block (blank lines do not,
    /// except inside fenced code): a gap between siblings makes a list loose.
    var startLine: Int
    var endLine: Int
    /// Lists: no blank line between their items or inside one.
    var isTight = true

    init(_ kind: Kind, line: Int) {
        self.kind = kind
        startLine = line
        endLine = line
    }

    var isParagraph: Bool { if case .paragraph = kind { true } else { false } }
    var isList: Bool { if case .list = kind { true } else { false } }

    /// Whether the block takes the lines given to it (the others hold blocks, or one line).
    var acceptsLines: Bool {
        switch kind {
        case .paragraph, .indentedCode, .fencedCode, .html, .table: true
        default: false
        }
    }

    func canContain(_ child: Kind) -> Bool {
        switch (kind, child) {
        case (.document, .item), (.quote, .item), (.item, .item): false
        case (.document, _), (.quote, _), (.item, _): true
        case (.list, .item): true
        default: false
        }
    }
}
