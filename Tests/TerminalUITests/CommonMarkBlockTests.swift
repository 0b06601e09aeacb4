import Testing
@testable import TerminalUI

/// CommonMark's own examples (spec 0.31.2, by section) for the block constructs this renderer
/// reads, with the blocks the spec's HTML gives, flattened to this renderer's blocks: `hN`
/// a heading, `p` a paragraph, `code` a code block, `li MARKER` a list item (its marker as
/// shown, indented to its parent's content column: a marker's width and one space), `quote` a
/// block quote; a thematic break is no block (the block before it draws a rule).
@Suite("CommonMark block structure")
struct CommonMarkBlockTests {
    struct Example: Sendable, CustomTestStringConvertible {
        let section: String
        let markdown: String
        let blocks: [String]
        var testDescription: String { "\(section): \(markdown.debugDescription)" }
    }

    static func blocks(_ markdown: String) -> [String] {
        Document(text: markdown, format: .markdown, name: "spec").blocks.map { block in
            switch block.kind {
            case .heading(let level): "h\(level) \(InlineMarkup.plain(block.text))"
            case .paragraph: "p \(InlineMarkup.plain(block.text))"
            case .code: "code \(block.text)"
            case .listItem(let marker): "li \(marker) \(InlineMarkup.plain(block.text))"
            case .quote: "quote \(InlineMarkup.plain(block.text))"
            case .table: "table \(block.text)"
            }
        }
    }

    static let thematicBreaks: [Example] = [
        .init(section: "Thematic breaks", markdown: "***\n---\n___", blocks: []),
        .init(section: "Thematic breaks", markdown: "+++", blocks: ["p +++"]),
        .init(section: "Thematic breaks", markdown: "===", blocks: ["p ==="]),
        .init(section: "Thematic breaks", markdown: " ***\n  ***\n   ***", blocks: []),
        .init(section: "Thematic breaks", markdown: "    ***", blocks: ["code ***"]),
        .init(section: "Thematic breaks", markdown: "Foo\n    ***", blocks: ["p Foo ***"]),
        .init(section: "Thematic breaks", markdown: "_____________________________________", blocks: []),
        .init(section: "Thematic breaks", markdown: " - - -", blocks: []),
        .init(section: "Thematic breaks", markdown: " **  * ** * ** * **", blocks: []),
        .init(section: "Thematic breaks", markdown: "-     -      -      -", blocks: []),
        .init(section: "Thematic breaks", markdown: "- - - -    ", blocks: []),
        .init(section: "Thematic breaks", markdown: "_ _ _ _ a\n\na------\n\n---a---", blocks: ["p _ _ _ _ a", "p a------", "p ---a---"]),
        .init(section: "Thematic breaks", markdown: "- foo\n***\n- bar", blocks: ["li • foo", "li • bar"]),
        .init(section: "Thematic breaks", markdown: "Foo\n***\nbar", blocks: ["p Foo", "p bar"]),
        .init(section: "Thematic breaks", markdown: "Foo\n---\nbar", blocks: ["h2 Foo", "p bar"]),
        .init(section: "Thematic breaks", markdown: "* Foo\n* * *\n* Bar", blocks: ["li • Foo", "li • Bar"]),
    ]

    static let atxHeadings: [Example] = [
        .init(section: "ATX headings", markdown: "# foo\n## foo\n### foo\n#### foo\n##### foo\n###### foo",
              blocks: ["h1 foo", "h2 foo", "h3 foo", "h4 foo", "h5 foo", "h6 foo"]),
        .init(section: "ATX headings", markdown: "####### foo", blocks: ["p ####### foo"]),
        .init(section: "ATX headings", markdown: "#5 bolt\n\n#hashtag", blocks: ["p #5 bolt", "p #hashtag"]),
        .init(section: "ATX headings", markdown: "\\## foo", blocks: ["p ## foo"]),
        .init(section: "ATX headings", markdown: "#                  foo                     ", blocks: ["h1 foo"]),
        .init(section: "ATX headings", markdown: " ### foo\n  ## foo\n   # foo", blocks: ["h3 foo", "h2 foo", "h1 foo"]),
        .init(section: "ATX headings", markdown: "    # foo", blocks: ["code # foo"]),
        .init(section: "ATX headings", markdown: "foo\n    # bar", blocks: ["p foo # bar"]),
        .init(section: "ATX headings", markdown: "## foo ##\n  ###   bar    ###", blocks: ["h2 foo", "h3 bar"]),
        .init(section: "ATX headings", markdown: "# foo ##################################\n##### foo ##", blocks: ["h1 foo", "h5 foo"]),
        .init(section: "ATX headings", markdown: "### foo ###     ", blocks: ["h3 foo"]),
        .init(section: "ATX headings", markdown: "### foo ### b", blocks: ["h3 foo ### b"]),
        .init(section: "ATX headings", markdown: "# foo#", blocks: ["h1 foo#"]),
        .init(section: "ATX headings", markdown: "### foo \\###", blocks: ["h3 foo ###"]),
        .init(section: "ATX headings", markdown: "****\n## foo\n****", blocks: ["h2 foo"]),
        .init(section: "ATX headings", markdown: "Foo bar\n# baz\nBar foo", blocks: ["p Foo bar", "h1 baz", "p Bar foo"]),
        .init(section: "ATX headings", markdown: "## \n#\n### ###", blocks: ["h2 ", "h1 ", "h3 "]),
    ]

    static let setextHeadings: [Example] = [
        .init(section: "Setext headings", markdown: "Foo *bar*\n=========\n\nFoo *bar*\n---------", blocks: ["h1 Foo bar", "h2 Foo bar"]),
        .init(section: "Setext headings", markdown: "Foo *bar\nbaz*\n====", blocks: ["h1 Foo bar baz"]),
        .init(section: "Setext headings", markdown: "Foo\n-------------------------\n\nFoo\n=", blocks: ["h2 Foo", "h1 Foo"]),
        .init(section: "Setext headings", markdown: "   Foo\n---\n\n  Foo\n-----\n\n  Foo\n  ===", blocks: ["h2 Foo", "h2 Foo", "h1 Foo"]),
        .init(section: "Setext headings", markdown: "    Foo\n    ---\n\n    Foo\n---", blocks: ["code Foo\n---\n\nFoo"]),
        .init(section: "Setext headings", markdown: "Foo\n   ----      ", blocks: ["h2 Foo"]),
        .init(section: "Setext headings", markdown: "Foo\n    ---", blocks: ["p Foo ---"]),
        .init(section: "Setext headings", markdown: "Foo\n= =\n\nFoo\n--- -", blocks: ["p Foo = =", "p Foo"]),
        .init(section: "Setext headings", markdown: "Foo  \n-----", blocks: ["h2 Foo"]),
        .init(section: "Setext headings", markdown: "> Foo\n---", blocks: ["quote Foo"]),
        .init(section: "Setext headings", markdown: "> foo\nbar\n===", blocks: ["quote foo bar ==="]),
        .init(section: "Setext headings", markdown: "- Foo\n---", blocks: ["li • Foo"]),
        .init(section: "Setext headings", markdown: "Foo\nBar\n---", blocks: ["h2 Foo Bar"]),
        .init(section: "Setext headings", markdown: "---\nFoo\n---\nBar\n---\nBaz", blocks: ["h2 Foo", "h2 Bar", "p Baz"]),
        .init(section: "Setext headings", markdown: "\n====", blocks: ["p ===="]),
        .init(section: "Setext headings", markdown: "---\n---", blocks: []),
        .init(section: "Setext headings", markdown: "    foo\n---", blocks: ["code foo"]),
        .init(section: "Setext headings", markdown: "> foo\n-----", blocks: ["quote foo"]),
    ]

    static let indentedCode: [Example] = [
        .init(section: "Indented code blocks", markdown: "    a simple\n      indented code block", blocks: ["code a simple\n  indented code block"]),
        .init(section: "Indented code blocks", markdown: "  - foo\n\n    bar", blocks: ["li • foo bar"]),
        .init(section: "Indented code blocks", markdown: "1.  foo\n\n    - bar", blocks: ["li 1. foo", "li    ◦ bar"]),
        .init(section: "Indented code blocks", markdown: "    <a/>\n    *hi*\n\n    - one", blocks: ["code <a/>\n*hi*\n\n- one"]),
        .init(section: "Indented code blocks", markdown: "    chunk1\n\n    chunk2\n  \n \n \n    chunk3", blocks: ["code chunk1\n\nchunk2\n\n\n\nchunk3"]),
        .init(section: "Indented code blocks", markdown: "    chunk1\n      \n      chunk2", blocks: ["code chunk1\n  \n  chunk2"]),
        .init(section: "Indented code blocks", markdown: "Foo\n    bar", blocks: ["p Foo bar"]),
        .init(section: "Indented code blocks", markdown: "    foo\nbar", blocks: ["code foo", "p bar"]),
        .init(section: "Indented code blocks", markdown: "# Heading\n    foo\nHeading\n------\n    foo\n----", blocks: ["h1 Heading", "code foo", "h2 Heading", "code foo"]),
        .init(section: "Indented code blocks", markdown: "        foo\n    bar", blocks: ["code     foo\nbar"]),
        .init(section: "Indented code blocks", markdown: "\n    \n    foo\n    \n", blocks: ["code foo"]),
        .init(section: "Indented code blocks", markdown: "    foo  ", blocks: ["code foo  "]),
    ]

    static let fencedCode: [Example] = [
        .init(section: "Fenced code blocks", markdown: "```\n<\n >\n```", blocks: ["code <\n >"]),
        .init(section: "Fenced code blocks", markdown: "~~~\n<\n >\n~~~", blocks: ["code <\n >"]),
        .init(section: "Fenced code blocks", markdown: "```\naaa\n~~~\n```", blocks: ["code aaa\n~~~"]),
        .init(section: "Fenced code blocks", markdown: "~~~\naaa\n```\n~~~", blocks: ["code aaa\n```"]),
        .init(section: "Fenced code blocks", markdown: "````\naaa\n```\n``````", blocks: ["code aaa\n```"]),
        .init(section: "Fenced code blocks", markdown: "~~~~\naaa\n~~~\n~~~~", blocks: ["code aaa\n~~~"]),
        .init(section: "Fenced code blocks", markdown: "```", blocks: ["code "]),
        .init(section: "Fenced code blocks", markdown: "`````\n\n```\naaa", blocks: ["code \n```\naaa"]),
        .init(section: "Fenced code blocks", markdown: "```\n\n  \n```", blocks: ["code \n  "]),
        .init(section: "Fenced code blocks", markdown: "```\n```", blocks: ["code "]),
        .init(section: "Fenced code blocks", markdown: " ```\n aaa\naaa\n```", blocks: ["code aaa\naaa"]),
        .init(section: "Fenced code blocks", markdown: "  ```\naaa\n  aaa\naaa\n  ```", blocks: ["code aaa\naaa\naaa"]),
        .init(section: "Fenced code blocks", markdown: "   ```\n   aaa\n    aaa\n  aaa\n   ```", blocks: ["code aaa\n aaa\naaa"]),
        .init(section: "Fenced code blocks", markdown: "    ```\n    aaa\n    ```", blocks: ["code ```\naaa\n```"]),
        .init(section: "Fenced code blocks", markdown: "```\naaa\n  ```", blocks: ["code aaa"]),
        .init(section: "Fenced code blocks", markdown: "   ```\naaa\n  ```", blocks: ["code aaa"]),
        .init(section: "Fenced code blocks", markdown: "```\naaa\n    ```", blocks: ["code aaa\n    ```"]),
        .init(section: "Fenced code blocks", markdown: "~~~~~~\naaa\n~~~ ~~", blocks: ["code aaa\n~~~ ~~"]),
        .init(section: "Fenced code blocks", markdown: "foo\n```\nbar\n```\nbaz", blocks: ["p foo", "code bar", "p baz"]),
        .init(section: "Fenced code blocks", markdown: "foo\n---\n~~~\nbar\n~~~\n# baz", blocks: ["h2 foo", "code bar", "h1 baz"]),
        .init(section: "Fenced code blocks", markdown: "```ruby\ndef foo(x)\n  return 3\nend\n```", blocks: ["code def foo(x)\n  return 3\nend"]),
        .init(section: "Fenced code blocks", markdown: "``` aa ```\nfoo", blocks: ["p aa foo"]),
        .init(section: "Fenced code blocks", markdown: "```\n``` aaa\n```", blocks: ["code ``` aaa"]),
    ]

    static let blockQuotes: [Example] = [
        .init(section: "Block quotes", markdown: "> bar\nbaz\n> foo", blocks: ["quote bar baz foo"]),
        .init(section: "Block quotes", markdown: "    > # Foo\n    > bar\n    > baz", blocks: ["code > # Foo\n> bar\n> baz"]),
        .init(section: "Block quotes", markdown: "> foo\n---", blocks: ["quote foo"]),
        .init(section: "Block quotes", markdown: ">", blocks: ["quote "]),
        .init(section: "Block quotes", markdown: "foo\n> bar", blocks: ["p foo", "quote bar"]),
        .init(section: "Block quotes", markdown: "> aaa\n***\n> bbb", blocks: ["quote aaa", "quote bbb"]),
        .init(section: "Block quotes", markdown: "> bar\n\nbaz", blocks: ["quote bar", "p baz"]),
        .init(section: "Block quotes", markdown: "> foo\n\n> bar", blocks: ["quote foo", "quote bar"]),
    ]

    static let lists: [Example] = [
        .init(section: "List items", markdown: "- one\n\n two", blocks: ["li • one", "p two"]),
        .init(section: "List items", markdown: "- one\n\n  two", blocks: ["li • one two"]),
        .init(section: "List items", markdown: " -    one\n\n     two", blocks: ["li • one", "code  two"]),
        .init(section: "List items", markdown: " -    one\n\n      two", blocks: ["li • one two"]),
        .init(section: "List items", markdown: "-one\n\n2.two", blocks: ["p -one", "p 2.two"]),
        .init(section: "List items", markdown: "123456789. ok", blocks: ["li 123456789. ok"]),
        .init(section: "List items", markdown: "1234567890. not ok", blocks: ["p 1234567890. not ok"]),
        .init(section: "List items", markdown: "0. ok", blocks: ["li 0. ok"]),
        .init(section: "List items", markdown: "003. ok", blocks: ["li 003. ok"]),
        .init(section: "List items", markdown: "-1. not ok", blocks: ["p -1. not ok"]),
        .init(section: "List items", markdown: "- foo\n-\n- bar", blocks: ["li • foo", "li • ", "li • bar"]),
        .init(section: "List items", markdown: "- a\n - b\n  - c\n   - d\n  - e\n - f\n- g",
              blocks: ["li • a", "li • b", "li • c", "li • d", "li • e", "li • f", "li • g"]),
        .init(section: "List items", markdown: "- foo\n  - bar\n    - baz\n      - boo",
              blocks: ["li • foo", "li   ◦ bar", "li     ▪ baz", "li       • boo"]),
        .init(section: "List items", markdown: "- foo\n - bar\n  - baz\n   - boo", blocks: ["li • foo", "li • bar", "li • baz", "li • boo"]),
        .init(section: "List items", markdown: "10) foo\n    - bar", blocks: ["li 10) foo", "li     ◦ bar"]),
        .init(section: "List items", markdown: "10) foo\n   - bar", blocks: ["li 10) foo", "li • bar"]),
        .init(section: "Lists", markdown: "- foo\n- bar\n+ baz", blocks: ["li • foo", "li • bar", "li • baz"]),
        .init(section: "Lists", markdown: "1. foo\n2. bar\n3) baz", blocks: ["li 1. foo", "li 2. bar", "li 3) baz"]),
        .init(section: "Lists", markdown: "Foo\n- bar\n- baz", blocks: ["p Foo", "li • bar", "li • baz"]),
        .init(section: "Lists", markdown: "The number of windows in my house is\n14.  The number of doors is 6.",
              blocks: ["p The number of windows in my house is 14.  The number of doors is 6."]),
        .init(section: "Lists", markdown: "The number of windows in my house is\n1.  The number of doors is 6.",
              blocks: ["p The number of windows in my house is", "li 1. The number of doors is 6."]),
        .init(section: "Lists", markdown: "- a\n- b\n\n- c", blocks: ["li • a", "li • b", "li • c"]),
        .init(section: "Lists", markdown: "1. a\n\n  2. b\n\n   3. c", blocks: ["li 1. a", "li 2. b", "li 3. c"]),
        .init(section: "Lists", markdown: "- a\n - b\n  - c\n   - d\n    - e", blocks: ["li • a", "li • b", "li • c", "li • d - e"]),
        .init(section: "Lists", markdown: "- a\n- b\n\n  c\n- d", blocks: ["li • a", "li • b c", "li • d"]),
        .init(section: "List items", markdown: "foo\n*\n\nfoo\n1.", blocks: ["p foo *", "p foo 1."]),
    ]

    /// Where this renderer's structure differed from the spec (issue 27.10): HTML blocks (shown
    /// as paragraph text), lazy continuation that a blank `>` line or code in the quote ends,
    /// an item that begins with a blank line, an item that begins with an item, link
    /// reference definitions.
    static let structureFixes: [Example] = [
        .init(section: "HTML blocks", markdown: "Foo\n<div>\nbar\n</div>", blocks: ["p Foo", "p <div> bar </div>"]),
        .init(section: "HTML blocks", markdown: "<div>\n*hello*\n\nafter", blocks: ["p <div> hello", "p after"]),
        .init(section: "HTML blocks", markdown: "<!-- foo -->*bar*\n*baz*", blocks: ["p <!-- foo -->bar", "p baz"]),
        .init(section: "HTML blocks", markdown: "<script>\nlet x = 1\n\nlet y = 2\n</script>\nokay", blocks: ["p <script> let x = 1 let y = 2 </script>", "p okay"]),
        .init(section: "HTML blocks", markdown: "Foo\n<a href=\"bar\">\nbaz", blocks: ["p Foo <a href=\"bar\"> baz"]),
        .init(section: "HTML blocks", markdown: "<a href=\"foo\">\n*bar*\n</a>", blocks: ["p <a href=\"foo\"> bar </a>"]),
        .init(section: "Block quotes", markdown: "> bar\n>\nbaz", blocks: ["quote bar", "p baz"]),
        .init(section: "Block quotes", markdown: ">     foo\n    bar", blocks: ["quote foo", "code bar"]),
        .init(section: "Block quotes", markdown: "> # Foo\n> bar\n> baz", blocks: ["quote Foo bar baz"]),
        .init(section: "List items", markdown: "-\n\n  foo", blocks: ["li • ", "p foo"]),
        .init(section: "List items", markdown: "- - foo", blocks: ["li • ", "li   ◦ foo"]),
        .init(section: "List items", markdown: "1. - 2. foo", blocks: ["li 1. ", "li    ◦ ", "li      2. foo"]),
        .init(section: "Link reference definitions", markdown: "[foo]: /url \"title\"\n\n[foo]", blocks: ["p [foo]"]),
        .init(section: "Link reference definitions", markdown: "Foo\n[bar]: /baz\n\n[bar]", blocks: ["p Foo [bar]: /baz", "p [bar]"]),
    ]

    static let all = thematicBreaks + atxHeadings + setextHeadings + indentedCode + fencedCode + blockQuotes + lists + structureFixes

    @Test(arguments: all)
    func specExample(_ example: Example) {
        #expect(Self.blocks(example.markdown) == example.blocks)
    }
}
