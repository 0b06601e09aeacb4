/// Markdown's block structure by CommonMark 0.31.2 (and GFM 0.29's tables), parsed as the
/// spec's appendix describes: each line first continues the open blocks it can (a quote's
/// `>`, an item's indentation), then opens new blocks, then goes to the deepest open block,
/// or lazily to a paragraph left open. `Document` flattens the tree (PROTOCOL.md §7).
struct MarkdownParser {
    /// Containers nest at most this deep; a deeper `>` or list marker is text. The tree is
    /// walked recursively, and a line of ten thousand `>` must not be ten thousand frames.
    static let maxDepth = 32

    private let root = MarkdownNode(.document, line: 0)
    private var tip: MarkdownNode
    private var oldTip: MarkdownNode
    private var lastMatched: MarkdownNode
    private var allClosed = true
    private var line: [Character] = []
    private var lineNumber = 0
    /// Where in `line` the containers' markers end, the first non-space at or after it, the
    /// spaces between them, and whether nothing else is left.
    private var offset = 0
    private var nextNonspace = 0
    private var indent = 0
    private var blank = false

    private init() {
        tip = root
        oldTip = root
        lastMatched = root
    }

    /// The block tree of `text` (tabs already expanded, so columns are characters).
    static func parse(_ text: String) -> MarkdownNode {
        var parser = MarkdownParser()
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if text.hasSuffix("\n") { lines.removeLast() }
        for line in lines { parser.incorporate(Array(line.hasSuffix("\r") ? line.dropLast() : line)) }
        while parser.tip !== parser.root { parser.finalize(parser.tip) }
        parser.finalize(parser.root)
        return parser.root
    }

    private enum Continuation { case matched, notMatched, lineDone }
    private enum Start { case none, container, leaf }

    private mutating func incorporate(_ characters: [Character]) {
        lineNumber += 1
        line = characters
        offset = 0
        oldTip = tip
        var container = root
        while let last = container.children.last, last.isOpen {
            findNextNonspace()
            switch continuation(of: last) {
            case .matched: container = last; continue
            case .notMatched: break
            case .lineDone: return
            }
            break
        }
        allClosed = container === oldTip
        lastMatched = container
        var matchedLeaf = !container.isParagraph && container.acceptsLines
        if case .table = container.kind { matchedLeaf = false }  // another block's start ends a table
        starts: while !matchedLeaf {
            findNextNonspace()
            switch start(in: &container) {
            case .container: continue
            case .leaf: matchedLeaf = true
            case .none: offset = nextNonspace; break starts
            }
        }
        let rest = offset < line.count ? String(line[offset...]) : ""
        if !allClosed, !blank, tip.isParagraph {
            tip.lines.append(rest)  // a lazy continuation line
            markContent(tip)
            return
        }
        closeUnmatched()
        switch container.kind {
        case .html(let ends):
            container.lines.append(rest)
            if !blank { markContent(container) }
            let lower = rest.lowercased()
            if ends.contains(where: lower.contains) { finalize(container) }
        case .fencedCode:
            guard container.startLine != lineNumber else { break }  // the opening fence
            container.lines.append(rest)
            markContent(container)
        case .indentedCode:
            container.lines.append(rest)
            if !blank { markContent(container) }
        case .paragraph:
            container.lines.append(rest)
            markContent(container)
        case .table:
            guard !blank, case .table(let alignments) = container.kind, container.startLine != lineNumber else { break }  // the delimiter row
            // As many cells as the header: missing ones empty, extra ones left out.
            let cells = MarkdownSyntax.cells(rest.trimmingSpaces())
            container.lines.append((cells.prefix(alignments.count) + Array(repeating: "", count: max(0, alignments.count - cells.count)))
                .joined(separator: "\t"))
            markContent(container)
        case .heading, .thematicBreak:
            break
        case .document, .quote, .item, .list:
            guard !blank else { break }
            offset = nextNonspace
            let paragraph = addChild(.paragraph)
            paragraph.lines.append(String(line[offset...]))
        }
    }

    private mutating func findNextNonspace() {
        var index = offset
        while index < line.count, line[index] == " " || line[index] == "\t" { index += 1 }
        nextNonspace = index
        indent = index - offset
        blank = index >= line.count
    }

    private var restFromNonspace: String { nextNonspace < line.count ? String(line[nextNonspace...]) : "" }

    /// Whether the open block `node` goes on on this line, consuming its markers if so.
    private mutating func continuation(of node: MarkdownNode) -> Continuation {
        switch node.kind {
        case .document, .list:
            return .matched
        case .quote:
            guard indent <= 3, nextNonspace < line.count, line[nextNonspace] == ">" else { return .notMatched }
            offset = nextNonspace + 1
            if offset < line.count, line[offset] == " " { offset += 1 }
            return .matched
        case .item(let column):
            if blank {
                // An item may begin with at most one blank line.
                guard !node.children.isEmpty else { return .notMatched }
                offset = nextNonspace
                return .matched
            }
            guard indent >= column else { return .notMatched }
            offset += column
            return .matched
        case .heading, .thematicBreak:
            return .notMatched
        case .fencedCode(let mark, let length, let fenceIndent, _):
            if indent <= 3, nextNonspace < line.count, line[nextNonspace] == mark {
                let run = line[nextNonspace...].prefix { $0 == mark }.count
                if run >= length, line[(nextNonspace + run)...].allSatisfy({ $0 == " " || $0 == "\t" }) {
                    markContent(node)
                    finalize(node)
                    return .lineDone
                }
            }
            var skip = fenceIndent
            while skip > 0, offset < line.count, line[offset] == " " {
                offset += 1
                skip -= 1
            }
            return .matched
        case .indentedCode:
            if indent >= 4 {
                offset += 4
                return .matched
            }
            guard blank else { return .notMatched }
            offset = nextNonspace
            return .matched
        case .html(let ends):
            return blank && ends.isEmpty ? .notMatched : .matched
        case .paragraph, .table:
            return blank ? .notMatched : .matched
        }
    }

    /// Opens the block that starts at `nextNonspace`, if one does (CommonMark's order).
    private mutating func start(in container: inout MarkdownNode) -> Start {
        let indented = indent >= 4
        let rest = restFromNonspace
        let mayNest = container.depth < Self.maxDepth
        if !indented, mayNest, rest.hasPrefix(">") {
            offset = nextNonspace + 1
            if offset < line.count, line[offset] == " " { offset += 1 }
            closeUnmatched()
            container = addChild(.quote)
            return .container
        }
        if !indented, let (level, text) = MarkdownSyntax.atxHeading(rest) {
            closeUnmatched()
            container = addChild(.heading(level: level))
            container.lines = [text]
            offset = line.count
            return .leaf
        }
        if !indented, let fence = MarkdownSyntax.fence(rest), fence.mark == "~" || !fence.info.contains("`") {
            closeUnmatched()
            container = addChild(.fencedCode(mark: fence.mark, length: fence.length, indent: indent, info: fence.info))
            offset = line.count
            return .leaf
        }
        if !indented, let ends = MarkdownSyntax.htmlBlockStart(rest, interrupting: container.isParagraph) {
            closeUnmatched()
            container = addChild(.html(ends: ends))
            return .leaf
        }
        if !indented, container.isParagraph, let header = container.lines.last?.trimmingSpaces(), header.contains("|"),
           rest.contains("|") || MarkdownSyntax.setextLevel(rest.trimmingSpaces()) == nil,
           let alignments = MarkdownSyntax.tableAlignments(rest.trimmingSpaces()),
           alignments.count == MarkdownSyntax.cells(header).count {
            // GFM: the paragraph's last line is the header of a table.
            container.lines.removeLast()
            let parent = container.parent!
            finalize(container)
            tip = parent
            let table = addChild(.table(alignments: alignments))
            table.lines = [MarkdownSyntax.cells(header).joined(separator: "\t")]
            container = table
            offset = line.count
            return .leaf
        }
        if !indented, container.isParagraph, let level = MarkdownSyntax.setextLevel(rest.trimmingSpaces()) {
            let text = MarkdownSyntax.droppingLinkReferenceDefinitions(container.lines)
            if !text.isEmpty {
                closeUnmatched()
                container.kind = .heading(level: level)
                container.lines = [text.map { $0.trimmingSpaces() }.joined(separator: " ")]
                markContent(container)
                finalize(container)
                offset = line.count
                return .leaf
            }
        }
        if !indented, MarkdownSyntax.isThematicBreak(rest) {
            closeUnmatched()
            container = addChild(.thematicBreak)
            offset = line.count
            return .leaf
        }
        if mayNest, !indented || container.isList, let (style, column) = listMarker(interrupting: container.isParagraph) {
            closeUnmatched()
            if case .list(let open) = tip.kind, open.bullet == style.bullet, open.delimiter == style.delimiter {
            } else {
                addChild(.list(style))
            }
            container = addChild(.item(contentColumn: column))
            return .container
        }
        if indented, !tip.isParagraph, !blank {
            offset += 4
            closeUnmatched()
            container = addChild(.indentedCode)
            return .leaf
        }
        return .none
    }

    /// A list marker at `nextNonspace`: its list's style and the item's content column
    /// (relative to the container), with `offset` moved to the content.
    private mutating func listMarker(interrupting paragraph: Bool) -> (MarkdownNode.ListStyle, Int)? {
        guard indent < 4, nextNonspace < line.count else { return nil }
        var style = MarkdownNode.ListStyle()
        var end = nextNonspace
        let first = line[nextNonspace]
        if first == "-" || first == "+" || first == "*" {
            style.bullet = first
            end += 1
        } else {
            let digits = line[nextNonspace...].prefix { $0.isASCII && $0.isNumber }
            guard (1...9).contains(digits.count), nextNonspace + digits.count < line.count else { return nil }
            let delimiter = line[nextNonspace + digits.count]
            guard delimiter == "." || delimiter == ")", let start = Int(String(digits)) else { return nil }
            guard !paragraph || start == 1 else { return nil }
            style.delimiter = delimiter
            style.start = start
            end += digits.count + 1
        }
        guard end == line.count || line[end] == " " || line[end] == "\t" else { return nil }
        let spaces = line[end...].prefix { $0 == " " }.count
        let blankItem = end + spaces >= line.count
        guard !(paragraph && blankItem) else { return nil }
        let markerWidth = end - nextNonspace
        let padding: Int
        if spaces >= 5 || spaces < 1 || blankItem {
            padding = markerWidth + 1
            offset = min(end + 1, line.count)
        } else {
            padding = markerWidth + spaces
            offset = end + spaces
        }
        return (style, indent + padding)
    }

    @discardableResult
    private mutating func addChild(_ kind: MarkdownNode.Kind) -> MarkdownNode {
        while !tip.canContain(kind) { finalize(tip) }
        let node = MarkdownNode(kind, line: lineNumber)
        node.parent = tip
        node.depth = tip.depth + 1
        tip.children.append(node)
        tip = node
        markContent(node)
        return node
    }

    /// This line held something of `node` (and so of every block around it).
    private func markContent(_ node: MarkdownNode) {
        var current: MarkdownNode? = node
        while let block = current {
            block.endLine = lineNumber
            current = block.parent
        }
    }

    private mutating func closeUnmatched() {
        guard !allClosed else { return }
        while oldTip !== lastMatched {
            let parent = oldTip.parent!
            finalize(oldTip)
            oldTip = parent
        }
        allClosed = true
    }

    private mutating func finalize(_ node: MarkdownNode) {
        node.isOpen = false
        switch node.kind {
        case .paragraph:
            node.lines = MarkdownSyntax.droppingLinkReferenceDefinitions(node.lines)
            if node.lines.isEmpty { node.parent?.children.removeAll { $0 === node } }
        case .indentedCode:
            while node.lines.last?.allSatisfy({ $0 == " " }) == true { node.lines.removeLast() }
        case .list:
            // Loose when a blank line comes between two items or two blocks of one item.
            func gap(_ nodes: [MarkdownNode]) -> Bool { zip(nodes, nodes.dropFirst()).contains { $0.endLine + 1 < $1.startLine } }
            node.isTight = !gap(node.children) && !node.children.contains { gap($0.children) }
        default:
            break
        }
        if tip === node, let parent = node.parent { tip = parent }
    }
}
