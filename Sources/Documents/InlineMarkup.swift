/// Markdown's inline emphasis (`*em*`, `_em_`), strong emphasis (`**strong**`, `__strong__`),
/// code spans (`` `code` ``) and links (`[text](url)`) as terminal styles; in code blocks, the
/// tokens `CodeHighlighter` finds.
///
/// The parser leaves the text as it reads and marks where a style starts and ends with
/// scalars of the private use area (zero columns wide); the renderer turns them into SGR
/// sequences after the row is cut to the screen. Text from the network cannot carry the
/// markers: `SafeText.document` has already made every private-use scalar a `�`.
public enum InlineMarkup {
    public enum Style: UInt32, CaseIterable, Sendable {
        case strong = 0xE000, emphasis = 0xE002, code = 0xE004, link = 0xE006
        /// Code tokens (`CodeHighlighter.Kind`).
        case keyword = 0xE008, string = 0xE00A, comment = 0xE00C, number = 0xE00E, type = 0xE010, inserted = 0xE012, deleted = 0xE014

        var on: Character { Character(Unicode.Scalar(rawValue)!) }
        var off: Character { Character(Unicode.Scalar(rawValue + 1)!) }
    }

    /// Whether `scalar` is a marker (on or off).
    public static func isMarker(_ scalar: Unicode.Scalar) -> Bool { (0xE000...0xE015).contains(scalar.value) }

    /// Rows cut from one text, each opening again the styles still open where the row
    /// before it ended: a token or an emphasis that wraps keeps its style on the next row.
    public static func continuing(_ rows: [String]) -> [String] {
        guard rows.count > 1, rows.contains(where: { $0.unicodeScalars.contains(where: isMarker) }) else { return rows }
        var open: [Style] = []
        return rows.map { row in
            let reopened = open.isEmpty ? row : String(String.UnicodeScalarView(open.map { Unicode.Scalar($0.rawValue)! })) + row
            for scalar in row.unicodeScalars where isMarker(scalar) {
                guard let style = Style(rawValue: scalar.value & ~1) else { continue }
                if scalar.value & 1 == 0 { open.append(style) } else if let at = open.lastIndex(of: style) { open.remove(at: at) }
            }
            return reopened
        }
    }

    /// The text without its markers (for titles, slugs and the status line).
    public static func plain(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isMarker) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.filter { !isMarker($0) }))
    }

    /// `text` with its inline markup turned into markers. A delimiter run that never closes
    /// is not markup and stays as it was written.
    public static func parse(_ text: String) -> String {
        let characters = Array(text)
        var out: [Character] = []
        var index = 0
        var open: [(delimiter: Character, style: Style, at: Int)] = []  // runs still open, and where their marker is
        func isSpace(_ i: Int) -> Bool { i < 0 || i >= characters.count || characters[i] == " " }
        func isWordCharacter(_ i: Int) -> Bool { !isSpace(i) && (characters[i].isLetter || characters[i].isNumber) }
        while index < characters.count {
            let character = characters[index]
            if character == "\\", index + 1 < characters.count, characters[index + 1].isPunctuation || characters[index + 1].isSymbol {
                out.append(characters[index + 1])  // a backslash escape: the character as it is
                index += 2
                continue
            }
            if character == "`" {
                // A code span: a run of N backticks up to the next run of exactly N; one space
                // on each side of the content is dropped. Unclosed, the run is text.
                let length = characters[index...].prefix { $0 == "`" }.count
                var scan = index + length
                var close: Int?
                while scan < characters.count {
                    guard characters[scan] == "`" else { scan += 1; continue }
                    let run = characters[scan...].prefix { $0 == "`" }.count
                    if run == length { close = scan; break }
                    scan += run
                }
                guard let close else {
                    out += characters[index..<(index + length)]
                    index += length
                    continue
                }
                var content = characters[(index + length)..<close]
                if content.count >= 2, content.first == " ", content.last == " ", content.contains(where: { $0 != " " }) {
                    content = content.dropFirst().dropLast()
                }
                out.append(Style.code.on)
                out += content
                out.append(Style.code.off)
                index = close + length
                continue
            }
            if character == "[", let closeBracket = characters[(index + 1)...].firstIndex(of: "]"),
               closeBracket + 1 < characters.count, characters[closeBracket + 1] == "(",
               let closeParen = characters[(closeBracket + 2)...].firstIndex(of: ")") {
                out += parse(String(characters[(index + 1)..<closeBracket]))
                let url = String(characters[(closeBracket + 2)..<closeParen])
                if !url.isEmpty {
                    out.append(Style.link.on)
                    out += " (\(url))"
                    out.append(Style.link.off)
                }
                index = closeParen + 1
                continue
            }
            if character == "*" || character == "_" {
                let double = index + 1 < characters.count && characters[index + 1] == character
                let length = double ? 2 : 1
                let style: Style = double ? .strong : .emphasis
                let before = index - 1, after = index + length
                // Closes an open run of the same kind when it follows text; opens one when
                // text follows it (`_` only at a word's edge: snake_case stays as it is).
                if let last = open.lastIndex(where: { $0.delimiter == character && $0.style == style }), !isSpace(before),
                   character == "*" || !isWordCharacter(after) {
                    for inner in open[last...].reversed() { out.append(inner.style.off) }
                    open.removeSubrange(last...)
                    index += length
                    continue
                }
                if !isSpace(after), character == "*" || !isWordCharacter(before) {
                    open.append((character, style, out.count))
                    out.append(style.on)
                    index += length
                    continue
                }
            }
            out.append(character)
            index += 1
        }
        // Runs never closed were not markup: their delimiters go back where they stood.
        for run in open.reversed() {
            out.replaceSubrange(run.at...run.at, with: repeatElement(run.delimiter, count: run.style == .strong ? 2 : 1))
        }
        return String(out)
    }
}
