/// Cuts lines of one language into spans by its `CodeLanguage` table, keeping what is left
/// open at a line's end (a block comment, a multi-line string) for the next line.
struct CodeScanner: Sendable {
    enum State: Sendable, Equatable {
        case code
        /// Inside a block comment, this many deep (nested comments).
        case comment(depth: Int)
        /// Inside a string opened by `language.quotes[quote]`.
        case string(quote: Int)
    }

    let language: CodeLanguage
    private(set) var state = State.code

    init(_ language: CodeLanguage) { self.language = language }

    /// The spans of the next line, covering it; adjacent spans differ in kind.
    mutating func spans(_ line: [Unicode.Scalar]) -> [CodeHighlighter.Span] {
        var out = Spans()
        if language.isDiff {
            out.add(Self.diffKind(line), 0, line.count)
            return out.spans
        }
        var i = 0
        switch state {
        case .code: break
        case .comment(let depth): i = comment(line, from: 0, depth: depth, &out)
        case .string(let quote): i = string(line, from: 0, quote: quote, &out)
        }
        if case .code = state, language.keys == .yaml, let key = Self.yamlKey(line) {
            out.add(.plain, 0, key.lowerBound)
            out.add(.type, key.lowerBound, key.upperBound)
            i = key.upperBound
        }
        while i < line.count {
            i = token(line, at: i, &out)
        }
        return out.spans
    }

    /// One token at `i`; where it ends.
    private mutating func token(_ line: [Unicode.Scalar], at i: Int, _ out: inout Spans) -> Int {
        let c = line[i]
        let afterSpace = i == 0 || line[i - 1] == " "
        if language.lineComments.contains(where: { Self.has($0, in: line, at: i) }), !language.commentsAfterSpace || afterSpace {
            out.add(.comment, i, line.count)
            return line.count
        }
        if let block = language.blockComment, Self.has(block.open, in: line, at: i) {
            out.add(.comment, i, i + block.open.count)
            return comment(line, from: i + block.open.count, depth: 1, &out)
        }
        if !language.quotesAfterSpace || afterSpace || "[{(,:=".unicodeScalars.contains(line[i - 1]),
           let quote = language.quotes.firstIndex(where: { Self.has($0.open, in: line, at: i) }) {
            out.add(.string, i, i + language.quotes[quote].open.count)
            let end = string(line, from: i + language.quotes[quote].open.count, quote: quote, &out)
            if language.keys == .json, state == .code, line[end...].first(where: { $0 != " " }) == ":" {
                out.spans[out.spans.count - 1].kind = .type  // a key
            }
            return end
        }
        if language.characterLiterals, c == "'", let end = Self.characterLiteralEnd(line, at: i) {
            out.add(.string, i, end)
            return end
        }
        let previousIsWord = i > 0 && isWordCharacter(line[i - 1])
        if c.isDigit, !previousIsWord {
            let end = Self.numberEnd(line, at: i)
            out.add(.number, i, end)
            return end
        }
        if !previousIsWord, c.isLetter || c == "_" || language.wordCharacters.contains(c) && c != "-" && c != "." {
            var end = i + 1
            while end < line.count, isWordCharacter(line[end]) { end += 1 }
            out.add(kind(of: line[i..<end]), i, end)
            return end
        }
        if (language.attributes && c == "@") || (language.directives && c == "#" && line[..<i].allSatisfy { $0 == " " }),
           i + 1 < line.count, line[i + 1].isLetter {
            var end = i + 1
            while end < line.count, isWordCharacter(line[end]) { end += 1 }
            out.add(.keyword, i, end)
            return end
        }
        if language.variables, c == "$", let end = Self.variableEnd(line, at: i) {
            out.add(.type, i, end)
            return end
        }
        out.add(.plain, i, i + 1)
        return i + 1
    }

    private func isWordCharacter(_ c: Unicode.Scalar) -> Bool {
        c.isLetter || c.isNumber || c == "_" || language.wordCharacters.contains(c)
    }

    private func kind(of word: ArraySlice<Unicode.Scalar>) -> CodeHighlighter.Kind {
        // Longer than any keyword or type: no string to make (and a short one is stored inline).
        if word.count <= 24 {
            let text = String(String.UnicodeScalarView(word))
            let key = language.caseInsensitive ? text.lowercased() : text
            if language.keywords.contains(key) { return .keyword }
            if language.types.contains(key) { return .type }
        }
        if language.capitalisedTypes, word.first?.properties.isUppercase == true, word.contains(where: \.properties.isLowercase) { return .type }
        return .plain
    }

    /// A block comment from `from` (its opening already read) to its close, or to the
    /// line's end with the state left open.
    private mutating func comment(_ line: [Unicode.Scalar], from: Int, depth: Int, _ out: inout Spans) -> Int {
        guard let block = language.blockComment else { return from }
        var depth = depth
        var i = from
        while i < line.count {
            if Self.has(block.close, in: line, at: i) {
                i += block.close.count
                depth -= 1
                if depth == 0 {
                    out.add(.comment, from, i)
                    state = .code
                    return i
                }
            } else if language.commentsNest, Self.has(block.open, in: line, at: i) {
                i += block.open.count
                depth += 1
            } else {
                i += 1
            }
        }
        out.add(.comment, from, line.count)
        state = .comment(depth: depth)
        return line.count
    }

    /// A string from `from` (its opening already read) to its close; one that may span lines
    /// and is not closed leaves the state open, another ends at the line's end.
    private mutating func string(_ line: [Unicode.Scalar], from: Int, quote index: Int, _ out: inout Spans) -> Int {
        let quote = language.quotes[index]
        var i = from
        while i < line.count {
            if quote.escapes, line[i] == "\\" {
                i += 2
            } else if Self.has(quote.close, in: line, at: i) {
                i += quote.close.count
                out.add(.string, from, i)
                state = .code
                return i
            } else {
                i += 1
            }
        }
        out.add(.string, from, line.count)
        state = quote.multiline ? .string(quote: index) : .code
        return line.count
    }

    static func has(_ needle: [Unicode.Scalar], in line: [Unicode.Scalar], at i: Int) -> Bool {
        guard i + needle.count <= line.count else { return false }
        for (offset, c) in needle.enumerated() where line[i + offset] != c { return false }
        return true
    }

    /// `1`, `0x1F`, `1_000`, `3.14`, `1e-9`, `10u8`: digits, letters and `_`, a `.` before a
    /// digit (so `0..<10` is two numbers), a sign after an exponent's `e`.
    static func numberEnd(_ line: [Unicode.Scalar], at start: Int) -> Int {
        let hex = start + 1 < line.count && line[start] == "0" && (line[start + 1] == "x" || line[start + 1] == "X")
        var i = start + 1
        while i < line.count {
            let c = line[i]
            if c.isASCII && (c.isLetter || c.isDigit) || c == "_" {
                i += 1
            } else if c == ".", i + 1 < line.count, line[i + 1].isDigit, line[i - 1] != "." {
                i += 1
            } else if c == "-" || c == "+", !hex, line[i - 1] == "e" || line[i - 1] == "E", i + 1 < line.count, line[i + 1].isDigit {
                i += 1
            } else {
                break
            }
        }
        return i
    }

    /// `'x'`, `'\n'`, `'\u{1F600}'`: the end of a character literal at `start`, if one is there.
    static func characterLiteralEnd(_ line: [Unicode.Scalar], at start: Int) -> Int? {
        guard start + 2 < line.count else { return nil }
        if line[start + 1] != "\\" { return line[start + 2] == "'" ? start + 3 : nil }
        var i = start + 3  // after the escaped character (`'\''`)
        while i < min(line.count, start + 12) {
            if line[i] == "'" { return i + 1 }
            i += 1
        }
        return nil
    }

    /// `$NAME`, `${…}`, `$1`, `$@`, `$?`: a shell variable's end, if one starts at `start`.
    static func variableEnd(_ line: [Unicode.Scalar], at start: Int) -> Int? {
        guard start + 1 < line.count else { return nil }
        let next = line[start + 1]
        if next == "{" { return line[(start + 2)...].firstIndex(of: "}").map { $0 + 1 } }
        if "@?#$!*-0123456789".unicodeScalars.contains(next) { return start + 2 }
        guard next.isLetter || next == "_" else { return nil }
        var i = start + 2
        while i < line.count, line[i].isLetter || line[i].isNumber || line[i] == "_" { i += 1 }
        return i
    }

    /// A YAML key starting a line (after its indentation and any `- `), up to its `: `.
    static func yamlKey(_ line: [Unicode.Scalar]) -> Range<Int>? {
        var start = 0
        while start < line.count, line[start] == " " || (line[start] == "-" && start + 1 < line.count && line[start + 1] == " ") { start += 1 }
        guard start < line.count, !"#\"'{[&*!|>%@`-".unicodeScalars.contains(line[start]) else { return nil }
        var i = start
        while i < line.count, line[i] != ":" {
            if line[i] == "#" { return nil }
            i += 1
        }
        guard i < line.count, i + 1 == line.count || line[i + 1] == " " else { return nil }
        return start..<i
    }

    static func diffKind(_ line: [Unicode.Scalar]) -> CodeHighlighter.Kind {
        let text = String(String.UnicodeScalarView(line.prefix(6)))
        if ["+++", "---", "diff ", "index "].contains(where: text.hasPrefix) { return .keyword }
        if text.hasPrefix("@@") { return .type }
        switch line.first {
        case "+": return .inserted
        case "-": return .deleted
        default: return .plain
        }
    }

    /// Spans as they are added, a run of one kind kept as one span.
    struct Spans {
        var spans: [CodeHighlighter.Span] = []

        mutating func add(_ kind: CodeHighlighter.Kind, _ from: Int, _ to: Int) {
            guard to > from else { return }
            if let last = spans.last, last.kind == kind, last.range.upperBound == from {
                spans[spans.count - 1].range = last.range.lowerBound..<to
            } else {
                spans.append(CodeHighlighter.Span(kind: kind, range: from..<to))
            }
        }
    }
}

fileprivate extension Unicode.Scalar {
    /// Letters of any script (ASCII first, without a table lookup).
    var isLetter: Bool {
        isASCII ? ("a"..."z").contains(self) || ("A"..."Z").contains(self) : properties.isAlphabetic
    }

    /// Digits of any script.
    var isNumber: Bool { isASCII ? isDigit : properties.numericType != nil }

    /// `0` to `9`.
    var isDigit: Bool { ("0"..."9").contains(self) }
}
