/// The line-level rules of CommonMark 0.31.2 and GFM tables that `MarkdownParser` asks about:
/// what starts a heading, a fence, an HTML block, a thematic break or a table, and what a
/// link reference definition is. Each takes a line from its first non-space character.
enum MarkdownSyntax {
    /// An ATX heading's level and text: 1 to 6 `#` then a space or the end of the line; a
    /// closing run of `#` after a space (or alone) is not part of the text.
    static func atxHeading(_ line: String) -> (Int, String)? {
        let hashes = line.prefix { $0 == "#" }.count
        guard (1...6).contains(hashes) else { return nil }
        let rest = line.dropFirst(hashes)
        guard rest.isEmpty || rest.first == " " || rest.first == "\t" else { return nil }
        let content = rest.trimmingSpaces()
        let open = content.reversed().drop { $0 == "#" }
        if open.isEmpty { return (hashes, "") }
        if open.first == " " || open.first == "\t" { return (hashes, String(open.reversed()).trimmingSpaces()) }
        return (hashes, content)
    }

    /// A code fence: three or more backticks or tildes, and the info string after them.
    static func fence(_ line: String) -> (mark: Character, length: Int, info: String)? {
        guard let mark = line.first, mark == "`" || mark == "~" else { return nil }
        let length = line.prefix { $0 == mark }.count
        guard length >= 3 else { return nil }
        return (mark, length, line.dropFirst(length).trimmingSpaces())
    }

    /// 1 for a line of `=`, 2 for a line of `-` (a setext heading's underline; trimmed).
    static func setextLevel(_ line: String) -> Int? {
        guard let first = line.first, first == "=" || first == "-", line.allSatisfy({ $0 == first }) else { return nil }
        return first == "=" ? 1 : 2
    }

    /// Three or more of one of `-`, `*`, `_`, with spaces between allowed.
    static func isThematicBreak(_ line: String) -> Bool {
        let marks = line.filter { $0 != " " && $0 != "\t" }
        guard let first = marks.first, "-*_".contains(first), marks.count >= 3 else { return false }
        return marks.allSatisfy { $0 == first }
    }

    /// Block-level HTML tag names (CommonMark §4.6, type 6).
    static let htmlBlockTags: Set<String> = [
        "address", "article", "aside", "base", "basefont", "blockquote", "body", "caption", "center", "col", "colgroup", "dd",
        "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset",
        "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hr", "html", "iframe", "legend", "li", "link", "main", "menu",
        "menuitem", "nav", "noframes", "ol", "optgroup", "option", "p", "param", "search", "section", "summary", "table", "tbody",
        "td", "tfoot", "th", "thead", "title", "tr", "track", "ul",
    ]

    /// Whether `line` starts an HTML block (CommonMark §4.6), and what ends it: the first
    /// line containing one of the strings (lower case), or a blank line when there are none.
    /// Type 7 (one complete tag alone on its line) cannot interrupt a paragraph.
    static func htmlBlockStart(_ line: String, interrupting: Bool) -> [String]? {
        guard line.hasPrefix("<") else { return nil }
        let lower = line.lowercased()
        for tag in ["pre", "script", "style", "textarea"] where lower.hasPrefix("<" + tag) {
            let after = lower.dropFirst(tag.count + 1).first
            if after == nil || after == " " || after == "\t" || after == ">" { return ["</pre>", "</script>", "</style>", "</textarea>"] }
        }
        if lower.hasPrefix("<!--") { return ["-->"] }
        if lower.hasPrefix("<?") { return ["?>"] }
        if lower.hasPrefix("<![cdata[") { return ["]]>"] }
        if lower.hasPrefix("<!"), let letter = lower.dropFirst(2).first, letter.isASCII, letter.isLetter { return [">"] }
        let closing = lower.hasPrefix("</")
        let name = lower.dropFirst(closing ? 2 : 1).prefix { $0.isASCII && ($0.isLetter || $0.isNumber) }
        let after = lower.dropFirst((closing ? 2 : 1) + name.count)
        if htmlBlockTags.contains(String(name)),
           after.isEmpty || after.hasPrefix(" ") || after.hasPrefix("\t") || after.hasPrefix(">") || after.hasPrefix("/>") {
            return []
        }
        guard !interrupting, let end = completeTag(Array(line)), line.dropFirst(end).allSatisfy({ $0 == " " || $0 == "\t" }) else { return nil }
        return []
    }

    /// The length of the open or closing tag `line` starts with (CommonMark §6.6), if it
    /// starts with one.
    static func completeTag(_ line: [Character]) -> Int? {
        func isNameStart(_ c: Character) -> Bool { c.isASCII && c.isLetter }
        func isSpace(_ c: Character) -> Bool { c == " " || c == "\t" || c == "\n" }
        var i = 1
        let closing = line.count > 1 && line[1] == "/"
        if closing { i = 2 }
        guard i < line.count, isNameStart(line[i]) else { return nil }
        while i < line.count, line[i].isASCII, line[i].isLetter || line[i].isNumber || line[i] == "-" { i += 1 }
        if closing {
            while i < line.count, isSpace(line[i]) { i += 1 }
            return i < line.count && line[i] == ">" ? i + 1 : nil
        }
        while true {
            let spaceStart = i
            while i < line.count, isSpace(line[i]) { i += 1 }
            guard i < line.count else { return nil }
            if line[i] == ">" { return i + 1 }
            if line[i] == "/" { return i + 1 < line.count && line[i + 1] == ">" ? i + 2 : nil }
            // An attribute needs white space before it.
            guard i > spaceStart, line[i].isASCII, line[i].isLetter || line[i] == "_" || line[i] == ":" else { return nil }
            while i < line.count, line[i].isASCII, line[i].isLetter || line[i].isNumber || "_.:-".contains(line[i]) { i += 1 }
            var j = i
            while j < line.count, isSpace(line[j]) { j += 1 }
            guard j < line.count, line[j] == "=" else { continue }
            j += 1
            while j < line.count, isSpace(line[j]) { j += 1 }
            guard j < line.count else { return nil }
            if line[j] == "\"" || line[j] == "'" {
                let quote = line[j]
                guard let close = line[(j + 1)...].firstIndex(of: quote) else { return nil }
                i = close + 1
            } else {
                let start = j
                while j < line.count, !isSpace(line[j]), !"\"'=<>`".contains(line[j]) { j += 1 }
                guard j > start else { return nil }
                i = j
            }
        }
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

    /// A table's delimiter row (`|---|:--:|`, trimmed): its columns' alignment, or nil when
    /// the line is not one.
    static func tableAlignments(_ line: String) -> [Document.ColumnAlignment]? {
        guard line.contains("-"), line.contains("|") || line.hasPrefix(":") || line.hasPrefix("-") else { return nil }
        let cells = cells(line)
        guard cells.allSatisfy({ cell in
            let core = cell.drop { $0 == ":" }.reversed().drop { $0 == ":" }
            return !core.isEmpty && core.allSatisfy { $0 == "-" } && cell.count - core.count <= 2
        }) else { return nil }
        return cells.map { cell in
            switch (cell.hasPrefix(":"), cell.hasSuffix(":")) {
            case (true, true): .center
            case (true, false): .left
            case (false, true): .right
            case (false, false): .none
            }
        }
    }

    /// A paragraph's lines without the link reference definitions it starts with
    /// (`[label]: destination "title"`, CommonMark §4.7): they define link targets and are
    /// neither a block nor text.
    static func droppingLinkReferenceDefinitions(_ lines: [String]) -> [String] {
        guard lines.first?.trimmingSpaces().hasPrefix("[") == true else { return lines }
        var text = Array(lines.map { $0.trimmingSpaces() }.joined(separator: "\n"))
        var consumed = false
        while let end = linkReferenceDefinitionEnd(text) {
            text.removeFirst(end)
            consumed = true
        }
        guard consumed else { return lines }
        return text.isEmpty ? [] : String(text).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Where the definition `text` starts with ends (after its line's newline), if it starts
    /// with one.
    static func linkReferenceDefinitionEnd(_ text: [Character]) -> Int? {
        func isSpace(_ c: Character) -> Bool { c == " " || c == "\t" }
        /// Spaces, and at most one line ending among them.
        func skipWhitespace(_ from: Int) -> Int {
            var i = from, newlines = 0
            while i < text.count, isSpace(text[i]) || (text[i] == "\n" && newlines == 0) {
                if text[i] == "\n" { newlines += 1 }
                i += 1
            }
            return i
        }
        /// The end of the line at `from` when only spaces are left on it.
        func lineEnd(_ from: Int) -> Int? {
            var i = from
            while i < text.count, isSpace(text[i]) { i += 1 }
            if i == text.count { return i }
            return text[i] == "\n" ? i + 1 : nil
        }
        guard text.first == "[" else { return nil }
        var i = 1, length = 0, hasContent = false
        while i < text.count, text[i] != "]" {
            if text[i] == "[" { return nil }
            if text[i] == "\\", i + 1 < text.count { i += 1; length += 1 }
            if !text[i].isWhitespace { hasContent = true }
            i += 1
            length += 1
            if length > 999 { return nil }
        }
        guard hasContent, i + 1 < text.count, text[i + 1] == ":" else { return nil }
        i = skipWhitespace(i + 2)
        guard i < text.count else { return nil }
        if text[i] == "<" {
            i += 1
            while i < text.count, text[i] != ">" {
                if text[i] == "\n" || text[i] == "<" { return nil }
                if text[i] == "\\" { i += 1 }
                i += 1
            }
            guard i < text.count else { return nil }
            i += 1
        } else {
            let start = i
            var depth = 0
            while i < text.count, !text[i].isWhitespace, !(text[i].asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false) {
                if text[i] == "\\", i + 1 < text.count, text[i + 1].isASCII, text[i + 1].isPunctuation || text[i + 1].isSymbol {
                    i += 2
                    continue
                }
                if text[i] == "(" { depth += 1 }
                if text[i] == ")" {
                    if depth == 0 { break }
                    depth -= 1
                }
                i += 1
            }
            guard i > start, depth == 0 else { return nil }
        }
        let withoutTitle = lineEnd(i)
        let titleStart = skipWhitespace(i)
        if titleStart > i, titleStart < text.count, "\"'(".contains(text[titleStart]) {
            let close: Character = text[titleStart] == "(" ? ")" : text[titleStart]
            var j = titleStart + 1
            var closed = false
            while j < text.count {
                if text[j] == "\\", j + 1 < text.count { j += 2; continue }
                if text[j] == close { closed = true; break }
                if text[titleStart] == "(" && text[j] == "(" { break }
                if text[j] == "\n", j + 1 < text.count, text[j + 1] == "\n" { break }  // no blank line in a title
                j += 1
            }
            if closed, let end = lineEnd(j + 1) { return end }
        }
        return withoutTitle
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" || last == "\r" { slice.removeLast() }
        return String(slice)
    }
}
