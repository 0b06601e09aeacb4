import Testing
@testable import Documents

/// Issue 47.13: fenced code highlighted by its info string, one highlighter for the terminal
/// and the browser. Each case: a language's lines and the tokens that are not plain, as
/// `kind:text`.
@Suite("Code highlighting")
struct CodeHighlighterTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let info: String
        let lines: [String]
        let tokens: [String]
        var testDescription: String { "\(info): \(lines.joined(separator: "⏎"))" }
        init(_ info: String, _ lines: [String], _ tokens: [String]) {
            self.info = info
            self.lines = lines
            self.tokens = tokens
        }
    }

    /// The spans that are not plain, line after line.
    static func tokens(_ info: String, _ lines: [String]) -> [String] {
        guard var highlighter = CodeHighlighter(info: info) else { return ["unknown"] }
        return lines.flatMap { line in
            let characters = Array(line.unicodeScalars)
            let spans = highlighter.spans(of: line)
            #expect(spans.map(\.range.lowerBound) == [0] + spans.dropLast().map(\.range.upperBound), "spans cover \(line) in order")
            #expect(spans.last?.range.upperBound ?? 0 == characters.count)
            return spans.filter { $0.kind != .plain }.map { "\($0.kind.rawValue):\(String(String.UnicodeScalarView(characters[$0.range])))" }
        }
    }

    static let cases: [Case] = [
        Case("swift", ["let x: Int = 42 // answer"], ["keyword:let", "type:Int", "number:42", "comment:// answer"]),
        Case("swift", ["@MainActor func f() async throws -> [String] { nil }"],
             ["keyword:@MainActor", "keyword:func", "keyword:async", "keyword:throws", "type:String", "keyword:nil"]),
        Case("swift", ["let s = \"\"\"", "  hello // not a comment", "\"\"\" + \"a\\\"b\""],
             ["keyword:let", "string:\"\"\"", "string:  hello // not a comment", "string:\"\"\"", "string:\"a\\\"b\""]),
        Case("swift", ["/* a /* b */ still */ for i in 0..<10 {}"], ["comment:/* a /* b */ still */", "keyword:for", "keyword:in", "number:0", "number:10"]),
        Case("python", ["def f(x): return 'hi' # c"], ["keyword:def", "keyword:return", "string:'hi'", "comment:# c"]),
        Case("py", ["x = '''doc", "# not a comment", "end''' if None else 3.5e-2"],
             ["string:'''doc", "string:# not a comment", "string:end'''", "keyword:if", "keyword:None", "keyword:else", "number:3.5e-2"]),
        Case("js", ["const s = `a ${b}", "c`; // t"], ["keyword:const", "string:`a ${b}", "string:c`", "comment:// t"]),
        Case("ts", ["let n: number = 0x1F as const"], ["keyword:let", "type:number", "number:0x1F", "keyword:as", "keyword:const"]),
        Case("golang", ["func main() { var r rune = 'x'; s := `raw \\", "line` }"],
             ["keyword:func", "keyword:var", "type:rune", "string:'x'", "string:`raw \\", "string:line`"]),
        Case("rs", ["fn f<'a>(s: &'a str) -> u8 { b'\\n'; 1u8 }"], ["keyword:fn", "type:str", "type:u8", "string:'\\n'", "number:1u8"]),
        Case("c", ["#include <stdio.h>", "int main(void) { /* start", "still */ return 0; }"],
             ["keyword:#include", "type:int", "type:void", "comment:/* start", "comment:still */", "keyword:return", "number:0"]),
        Case("c++", ["std::unique_ptr<Foo> p = nullptr; char c = '\\'';"],
             ["type:unique_ptr", "type:Foo", "keyword:nullptr", "type:char", "string:'\\''"]),
        Case("java", ["@Override public String toString() { return \"x\"; }"],
             ["keyword:@Override", "keyword:public", "type:String", "keyword:return", "string:\"x\""]),
        Case("kt", ["fun main() { val x = 1 }"], ["keyword:fun", "keyword:val", "number:1"]),
        Case("bash", ["if [ -n \"$HOME\" ]; then echo $USER ${X:-y}; fi # done"],
             ["keyword:if", "string:\"$HOME\"", "keyword:then", "keyword:echo", "type:$USER", "type:${X:-y}", "keyword:fi", "comment:# done"]),
        Case("sh", ["echo a#b --in apt-get 'it", "spans'"], ["keyword:echo", "string:'it", "string:spans'"]),
        Case("zsh", ["for f in *.md; do wc -l \"$f\"; done"], ["keyword:for", "keyword:in", "keyword:do", "string:\"$f\"", "keyword:done"]),
        Case("sql", ["SELECT id FROM users WHERE age > 21 -- adults"], ["keyword:SELECT", "keyword:FROM", "keyword:WHERE", "number:21", "comment:-- adults"]),
        Case("sql", ["create table t (s varchar(10) default 'it''s');"],
             ["keyword:create", "keyword:table", "type:varchar", "number:10", "keyword:default", "string:'it''s'"]),
        Case("json", ["{\"name\": \"x\", \"n\": -1.5e3, \"ok\": true, \"v\": null}"],
             ["type:\"name\"", "string:\"x\"", "type:\"n\"", "number:1.5e3", "type:\"ok\"", "keyword:true", "type:\"v\"", "keyword:null"]),
        Case("yml", ["- name: it's fine # note", "  enabled: yes", "url: \"http://x\" # c", "# key: no"],
             ["type:name", "comment:# note", "type:enabled", "keyword:yes", "type:url", "string:\"http://x\"", "comment:# c", "comment:# key: no"]),
        Case("diff", ["diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1 +1 @@", "-old", "+new", " same"],
             ["keyword:diff --git a/x b/x", "keyword:--- a/x", "keyword:+++ b/x", "type:@@ -1 +1 @@", "deleted:-old", "inserted:+new"]),
        Case("brainfuck", ["+[->+<]"], ["unknown"]),
    ]

    @Test(arguments: cases)
    func tokens(_ example: Case) {
        #expect(Self.tokens(example.info, example.lines) == example.tokens)
    }

    @Test(arguments: [
        ("swift", "swift"), ("py", "python"), ("Python", "python"), ("python3", "python"), ("js", "javascript"), ("jsx", "javascript"),
        ("ts", "typescript"), ("go", "go"), ("golang", "go"), ("rs", "rust"), ("rust,ignore", "rust"), ("c", "c"), ("c++", "cpp"),
        ("cpp", "cpp"), ("java", "java"), ("kt", "kotlin"), ("kotlin", "kotlin"), ("sh", "shell"), ("bash", "shell"), ("zsh", "shell"),
        ("sql", "sql"), ("json", "json"), ("yml", "yaml"), ("yaml", "yaml"), ("diff", "diff"), ("{.python}", "python"),
        ("language-js", "javascript"), ("js title=\"x.js\"", "javascript"),
    ])
    func aliases(_ info: String, _ language: String) {
        #expect(CodeHighlighter(info: info)?.language == language)
    }

    /// A fence without a known language stays plain (no markers); one with a language is
    /// marked, and its block names the language.
    @Test func documentsMarkKnownLanguagesOnly() {
        let document = Document(text: "```swift\nlet x = 1\n```\n\n```\nlet x = 1\n```\n\n```klingon\nlet x = 1\n```\n\n    let x = 1\n",
                                format: .markdown, name: "d")
        #expect(document.blocks.map(\.language) == ["swift", nil, nil, nil])
        #expect(document.blocks[0].text == "\u{E008}let\u{E009} x = \u{E00E}1\u{E00F}")
        #expect(document.blocks.dropFirst().allSatisfy { $0.text == "let x = 1" })
    }

    /// A document cannot bring the highlighter's markers in: they become `�`.
    @Test func markersCannotComeFromTheDocument() {
        let forged = (0xE000...0xE015).map { String(Unicode.Scalar($0)!) }.joined()
        let document = Document(text: "```swift\nlet s = \"\(forged)\"\n```", format: .markdown, name: "d")
        let scalars = document.blocks[0].text.unicodeScalars.filter(InlineMarkup.isMarker).map(\.value)
        #expect(scalars == [0xE008, 0xE009, 0xE00A, 0xE00B], "only the highlighter's own markers: \(scalars)")
    }
}
