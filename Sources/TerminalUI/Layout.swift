import ScrollModel

/// A document wrapped to a width: rows on screen, and the mapping between rows and
/// anchors (block id plus the fraction of the block above the top of the view).
public struct Layout: Sendable {
    public enum Style: Sendable, Equatable { case heading(Int), body, quote, code, blank, rule }

    public struct Row: Sendable, Equatable {
        public var text: String
        public var style: Style
        public var block: Int
    }

    public let width: Int
    public let document: Document
    public private(set) var rows: [Row] = []
    /// First row of each block; a block's rows include the blank row after it.
    public private(set) var blockStart: [Int] = []
    private var index: [String: Int] = [:]

    public init(document: Document, width: Int) {
        self.document = document
        self.width = max(10, width)
        for (number, block) in document.blocks.enumerated() {
            blockStart.append(rows.count)
            index[block.id] = number
            append(block, number)
            // A thematic break after the block: a rule, a blank row on either side.
            if block.ruleAfter {
                rows.append(Row(text: "", style: .blank, block: number))
                rows.append(Row(text: String(repeating: "─", count: self.width), style: .rule, block: number))
            }
            // No gap between the items of a tight list.
            if number < document.blocks.count - 1 && !block.joinsNext { rows.append(Row(text: "", style: .blank, block: number)) }
        }
    }

    public var rowCount: Int { rows.count }

    /// The gutter mark of a code row that continues the line above it.
    public static let continuation = "↪"

    public func rowCount(ofBlock block: Int) -> Int {
        (block + 1 < blockStart.count ? blockStart[block + 1] : rows.count) - blockStart[block]
    }

    /// The anchor for a view whose top row is `row`.
    public func anchor(atRow row: Int) -> Anchor? {
        guard !rows.isEmpty else { return nil }
        let row = min(max(0, row), rows.count - 1)
        let block = rows[row].block
        let fraction = Double(row - blockStart[block]) / Double(rowCount(ofBlock: block))
        return Anchor(id: document.blocks[block].id, fraction: fraction)
    }

    /// The top row that puts `anchor` at the top: the block's first row plus the same
    /// fraction of this layout's rows for the block (interpolated, not snapped).
    public func row(for anchor: Anchor) -> Int? {
        guard let block = index[anchor.id] else { return nil }
        return Self.row(start: blockStart[block], height: rowCount(ofBlock: block), fraction: anchor.fraction)
    }

    /// The row `fraction` of the way into a block that starts at `start` and is `height` rows
    /// tall, rounded half away from zero and kept inside the block (PROTOCOL.md §3).
    public static func row(start: Int, height: Int, fraction: Double) -> Int {
        ScrollState.anchorRow(start: start, height: height, fraction: fraction)
    }

    /// The top row a view of `viewport` rows shows for `state` (PROTOCOL.md §3): by the
    /// anchor's block id in this layout, else by progress, else by offset.
    public func top(for state: ScrollState, viewport: Int) -> Int {
        state.top(anchorRow: state.anchor.flatMap(row(for:)), maxTop: max(0, rowCount - viewport))
    }

    /// Index of the heading block of the section that `row` is in.
    public func section(atRow row: Int) -> Int? {
        guard !rows.isEmpty else { return nil }
        let block = rows[min(max(0, row), rows.count - 1)].block
        return document.blocks[block].section
    }

    /// First row of the next (or, with `forward: false`, previous) heading from `row`.
    public func headingRow(from row: Int, forward: Bool) -> Int? {
        let headings = document.blocks.indices.filter { if case .heading = document.blocks[$0].kind { true } else { false } }.map { blockStart[$0] }
        return forward ? headings.first { $0 > row } : headings.last { $0 < row }
    }

    // MARK: Wrapping

    private mutating func append(_ block: Document.Block, _ number: Int) {
        switch block.kind {
        case .heading(let level):
            for line in Self.wrap(block.text, width: width) { rows.append(Row(text: line, style: .heading(level), block: number)) }
        case .paragraph:
            for line in Self.wrap(block.text, width: width) { rows.append(Row(text: line, style: .body, block: number)) }
        case .listItem(let marker):
            let indent = DisplayWidth.of(marker) + 1
            if indent > width / 2 {
                // A marker too wide to indent by (a long number on a narrow terminal): on a row of its own.
                for line in Self.hardWrap(marker, width: width) { rows.append(Row(text: line, style: .body, block: number)) }
                for line in Self.wrap(block.text, width: width - 2) { rows.append(Row(text: "  " + line, style: .body, block: number)) }
                return
            }
            for (i, line) in Self.wrap(block.text, width: width - indent).enumerated() {
                let prefix = i == 0 ? marker + " " : String(repeating: " ", count: indent)
                rows.append(Row(text: prefix + line, style: .body, block: number))
            }
        case .quote:
            for line in Self.wrap(block.text, width: width - 2) { rows.append(Row(text: "│ " + line, style: .quote, block: number)) }
        case .code:
            // A line wider than the screen is broken at the width; `↪` in the gutter marks each
            // continuation row, so a reader sees the line goes on (the rows are the same).
            for source in block.text.split(separator: "\n", omittingEmptySubsequences: false) {
                for (piece, line) in InlineMarkup.continuing(Self.hardWrap(String(source), width: width - 2)).enumerated() {
                    rows.append(Row(text: (piece == 0 ? "  " : Self.continuation + " ") + line, style: .code, block: number))
                }
            }
        case .table:
            for line in Self.table(block.text, width: width, alignments: block.alignments) { rows.append(Row(text: line, style: .body, block: number)) }
        }
    }

    /// A table as aligned columns (`a │ b`, a rule under the header) when it fits the width;
    /// otherwise each row as its cells joined by ` · `, wrapped.
    static func table(_ text: String, width: Int, alignments: [Document.ColumnAlignment] = []) -> [String] {
        let rows = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        let columns = rows.map(\.count).max() ?? 0
        let widths = (0..<columns).map { column in rows.map { column < $0.count ? DisplayWidth.of($0[column]) : 0 }.max() ?? 0 }
        guard columns > 0, widths.reduce(0, +) + 3 * (columns - 1) <= width else {
            return rows.flatMap { wrap($0.joined(separator: " · "), width: width) }
        }
        func line(_ cells: [String]) -> String {
            (0..<columns).map { column in
                let cell = column < cells.count ? cells[column] : ""
                let room = widths[column] - DisplayWidth.of(cell)
                switch column < alignments.count ? alignments[column] : .none {
                case .right: return String(repeating: " ", count: room) + cell
                case .center: return String(repeating: " ", count: room / 2) + cell + String(repeating: " ", count: room - room / 2)
                case .left, .none: return cell + String(repeating: " ", count: room)
                }
            }.joined(separator: " │ ")
        }
        let rule = widths.map { String(repeating: "─", count: $0) }.joined(separator: "─┼─")
        return [line(rows[0]), rule] + rows.dropFirst().map(line)
    }

    /// Word wrap by display width; a word wider than the line is broken. A style that runs
    /// over a break opens again on the next line (`InlineMarkup.continuing`).
    static func wrap(_ text: String, width: Int) -> [String] {
        let width = max(1, width)
        var lines = [String]()
        var line = ""
        var lineWidth = 0
        // "Is the line empty" is `line.isEmpty`, not a width of 0: a zero-width word (U+200B)
        // starts a line like any other and is never overwritten by the next.
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let wordWidth = DisplayWidth.of(word)
            if !line.isEmpty && lineWidth + 1 + wordWidth <= width {
                line += " " + word
                lineWidth += 1 + wordWidth
            } else {
                if !line.isEmpty { lines.append(line) }
                if wordWidth <= width {
                    line = String(word)
                    lineWidth = wordWidth
                } else {
                    var pieces = hardWrap(String(word), width: width)
                    line = pieces.removeLast()
                    lineWidth = DisplayWidth.of(line)
                    lines += pieces
                }
            }
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return InlineMarkup.continuing(lines)
    }

    /// Breaks text at the width, never inside a character. A line does not start with
    /// closing punctuation (CJK line breaking, "kinsoku": 。，、」 and the like): the
    /// character before it moves down with it, so no row grows wider.
    static func hardWrap(_ text: String, width: Int) -> [String] {
        let width = max(2, width)
        var lines = [String]()
        var line = ""
        var lineWidth = 0
        for character in text {
            let w = DisplayWidth.of(character)
            if lineWidth + w > width {
                var carried = ""
                if noLineStart.contains(character), line.count > 1, let last = line.last, !noLineStart.contains(last) {
                    carried = String(line.removeLast())
                }
                lines.append(line)
                line = carried
                lineWidth = DisplayWidth.of(carried)
            }
            line.append(character)
            lineWidth += w
        }
        lines.append(line)
        return lines
    }

    /// Characters a line must not start with (closing punctuation, CJK and Western).
    static let noLineStart: Set<Character> = Set("。，、．：；？！）」』】〕〉》〙〗〛’”ー…‥・ゝゞヽヾ々〻ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ,.:;?!)]}")
}
