/// Syntax highlighting of fenced code by its info string, for the terminal and the browser
/// alike: a line at a time into spans of token kinds, a comment or string left open at the
/// end of a line carrying over to the next. It reads text the document has already made safe
/// (`SafeText.document`) and only marks where tokens start and end; the renderers turn the
/// marks into their own styles (SGR, `<span class>`), so a document adds no escape of its own.
///
///     var highlighter = CodeHighlighter(info: "swift")!
///     highlighter.spans(of: "let x = 1")  // keyword "let", plain " x = ", number "1"
public struct CodeHighlighter: Sendable {
    /// What a span of code is. The raw value names it in the browser (`tok-keyword`).
    public enum Kind: String, Sendable, CaseIterable {
        case plain, keyword, string, comment, number, type
        /// A diff's added and removed lines.
        case inserted, deleted

        /// The kind a marker's style stands for (`plain` for the styles of prose).
        public init(_ style: InlineMarkup.Style) {
            self = Self.allCases.first { $0.style == style } ?? .plain
        }

        /// The inline-markup style that marks this kind in a block's text (nil: plain).
        public var style: InlineMarkup.Style? {
            switch self {
            case .plain: nil
            case .keyword: .keyword
            case .string: .string
            case .comment: .comment
            case .number: .number
            case .type: .type
            case .inserted: .inserted
            case .deleted: .deleted
            }
        }
    }

    /// A run of one kind: its Unicode scalars in the line (offsets into `line.unicodeScalars`).
    public struct Span: Sendable, Equatable {
        public var kind: Kind
        public var range: Range<Int>
    }

    /// The language's canonical name (`javascript` for `js`).
    public var language: String { scanner.language.name }
    private var scanner: CodeScanner

    /// A highlighter for the language an info string names (`swift`, `py`, `c++`, `{.rust}`),
    /// or nil when the language is not known: its code stays plain.
    public init?(info: String) {
        guard let language = CodeLanguage.named(info) else { return nil }
        scanner = CodeScanner(language)
    }

    /// The next line's spans, in order, covering the line; adjacent spans differ in kind.
    public mutating func spans(of line: String) -> [Span] {
        scanner.spans(Array(line.unicodeScalars))
    }

    /// `code` with each token between its style's markers (`InlineMarkup`), lines kept: what
    /// a code block's text holds. Every marker closes on its line.
    public mutating func marked(_ code: String) -> String {
        var out = String.UnicodeScalarView()
        for (number, line) in code.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if number > 0 { out.append("\n") }
            let scalars = Array(line.unicodeScalars)
            for span in scanner.spans(scalars) {
                guard let style = span.kind.style else {
                    out.append(contentsOf: scalars[span.range])
                    continue
                }
                out.append(Unicode.Scalar(style.rawValue)!)
                out.append(contentsOf: scalars[span.range])
                out.append(Unicode.Scalar(style.rawValue + 1)!)
            }
        }
        return String(out)
    }
}
