/// How one language's code is cut into tokens: the words and delimiters `CodeScanner` reads.
/// One table per language (`CodeLanguage+Tables.swift`); what is not in a table is plain.
struct CodeLanguage: Sendable {
    /// A string's delimiters.
    struct Quote: Sendable {
        var open: [Unicode.Scalar]
        var close: [Unicode.Scalar]
        /// A backslash escapes the next character (not in raw strings: Go's `` ` ``, shell's `'`).
        var escapes = true
        /// The string may go on past the end of its line; its state carries to the next.
        var multiline = false

        init(_ open: String, _ close: String? = nil, escapes: Bool = true, multiline: Bool = false) {
            self.open = Array(open.unicodeScalars)
            self.close = Array((close ?? open).unicodeScalars)
            self.escapes = escapes
            self.multiline = multiline
        }
    }

    /// What else is a key (shown as a type): JSON's strings before `:`, YAML's words that
    /// start a line and end in `: `.
    enum Keys: Sendable { case none, json, yaml }

    /// The canonical name (`swift`, `javascript`), what `Document.Block.language` holds.
    var name: String
    var keywords: Set<String> = []
    var types: Set<String> = []
    /// A word that starts with a capital and has a lower-case letter (`String`, `HashMap`, not
    /// `MAX_SIZE`) is a type.
    var capitalisedTypes = true
    /// Keywords and types match in any case (SQL).
    var caseInsensitive = false
    var lineComments: [[Unicode.Scalar]] = []
    /// A line comment starts only at the start of a word (shell and YAML: `$#`, `a#b` are not).
    var commentsAfterSpace = false
    var blockComment: (open: [Unicode.Scalar], close: [Unicode.Scalar])?
    /// Block comments nest (Swift, Rust, Kotlin).
    var commentsNest = false
    /// Longest first: `"""` is tried before `"`.
    var quotes: [Quote] = []
    /// A quote opens a string only at the start of a value (YAML: `it's` is plain text).
    var quotesAfterSpace = false
    /// `'x'` and `'\n'` are strings; a lone `'` (Rust's lifetimes) is plain.
    var characterLiterals = false
    var keys = Keys.none
    /// Characters a word may hold besides letters, digits and `_` (`$` in JavaScript).
    var wordCharacters: Set<Unicode.Scalar> = []
    /// `#include` at a line's start is a keyword (C's preprocessor).
    var directives = false
    /// `@MainActor`, `@Override`, `@decorator`: a keyword.
    var attributes = false
    /// `$NAME`, `${NAME}`, `$1` are shown as types (shell).
    var variables = false
    /// Each line is one token by its first character (`+`, `-`, `@@`).
    var isDiff = false

    /// The table for a fenced block's info string (its first word, any case; `{.python}`,
    /// `rust,ignore` and `language-js` too), or nil when the language is not known.
    static func named(_ info: String) -> CodeLanguage? {
        var word = Substring(info.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }).first ?? "")
        word = word.drop { $0 == "{" || $0 == "." }
        if word.hasSuffix("}") { word = word.dropLast() }
        var name = word.lowercased()
        if name.hasPrefix("language-") { name.removeFirst("language-".count) }
        guard let canonical = aliases[name] ?? (tables[name] != nil ? name : nil) else { return nil }
        return tables[canonical]
    }

    /// Other names for the languages, as fences write them.
    static let aliases: [String: String] = [
        "py": "python", "python3": "python", "py3": "python",
        "js": "javascript", "jsx": "javascript", "mjs": "javascript", "cjs": "javascript", "node": "javascript",
        "ts": "typescript", "tsx": "typescript",
        "golang": "go", "rs": "rust", "h": "c",
        "c++": "cpp", "cc": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp",
        "kt": "kotlin", "kts": "kotlin",
        "sh": "shell", "bash": "shell", "zsh": "shell", "ksh": "shell", "shellscript": "shell",
        "postgres": "sql", "postgresql": "sql", "mysql": "sql", "sqlite": "sql",
        "jsonc": "json", "yml": "yaml", "patch": "diff", "udiff": "diff",
    ]

    /// Space-separated words as a set.
    static func words(_ list: String) -> Set<String> { Set(list.split(separator: " ").map(String.init)) }
}
