import TerminalUI
import ScrollModel
#if canImport(Glibc)
import Glibc
#endif

// Render cost of a large code-heavy document (Scripts/bench-render builds and runs it): parse
// (highlighting happens there), lay out at 80 columns, and draw every screen (`view`) a page at
// a time. `plain` gives its fences no known language (what every fence was before issue 47.13's
// highlighting); `highlighted` the same code with languages. Times are thread CPU time; the
// script counts instructions under callgrind, which a busy machine does not change.
func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

let samples: [(String, String)] = [
    ("swift", "/* A block\n   comment */\n@MainActor final class Room {\n    let name: String = \"demo\" // the room\n    func join(_ id: Int) async throws -> [String] { return [\"a\", \"b\"] + names.map { $0 + \"\\(id)\" } }\n}"),
    ("python", "def fib(n: int) -> int:\n    '''Fibonacci,\n    slowly.'''\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # recursion\nprint([fib(i) for i in range(0x10)])"),
    ("js", "const rooms = new Map(); // by name\nexport async function join(name, id = 0) {\n  const t = `room ${name}`;\n  return rooms.get(name) ?? null;\n}"),
    ("go", "func main() {\n\tvar n int64 = 42\n\ts := `raw\nstring`\n\tfmt.Println(n, s, 'x') // done\n}"),
    ("rust", "fn longest<'a>(a: &'a str, b: &'a str) -> &'a str {\n    if a.len() > b.len() { a } else { b } // by length\n}\nlet v: Vec<u32> = (0..10).collect();"),
    ("c", "#include <stdio.h>\nint main(void) {\n    /* print */ printf(\"%d\\n\", 42);\n    return 0;\n}"),
    ("sql", "SELECT r.name, count(*) AS followers\nFROM rooms r JOIN members m ON m.room = r.id\nWHERE r.created > '2024-01-01' -- this year\nGROUP BY r.name ORDER BY 2 DESC LIMIT 10;"),
    ("json", "{\n  \"name\": \"demo\",\n  \"followers\": 1200,\n  \"private\": false,\n  \"tags\": [\"a\", \"b\", null]\n}"),
    ("yaml", "server:\n  port: 8080 # default\n  tls: false\n  rooms:\n    - name: \"demo\"\n      key: s3cret"),
    ("diff", "--- a/x.swift\n+++ b/x.swift\n@@ -1,3 +1,3 @@\n-let x = 1\n+let x = 2\n context line"),
]

func document(languages: Bool, blocks: Int) -> String {
    var text = "# Code-heavy document\n\n"
    for number in 0..<blocks {
        let (language, code) = samples[number % samples.count]
        text += "## Part \(number)\n\nSome prose about **part \(number)** with `inline code` and a [link](https://example.com).\n\n"
        text += "```\(languages ? language : "text")\n\(code)\n```\n\n"
    }
    return text
}

func measure(_ label: String, _ text: String, runs: Int) {
    var parse = [Double](), layout = [Double](), draw = [Double]()
    var rows = 0
    for _ in 0..<runs {
        var start = now()
        let document = Document(text: text, format: .markdown, name: "bench.md")
        parse.append(now() - start)
        start = now()
        let laid = Layout(document: document, width: 80)
        layout.append(now() - start)
        rows = laid.rowCount
        var model = ViewerModel.follower(room: "r", localDocument: document, width: 80, height: 40)
        start = now()
        var screens = 0
        var bytes = 0
        while true {
            bytes += view(model).lines.reduce(0) { $0 + $1.utf8.count }
            screens += 1
            if model.top >= model.maxTop { break }
            _ = update(&model, .key(.pageDown))
        }
        draw.append(now() - start)
        if bytes == 0 { print("nothing drawn") }
    }
    func median(_ values: [Double]) -> String { "\(Double(Int(values.sorted()[values.count / 2] * 10_000)) / 10) ms" }
    print("\(label): \(text.utf8.count / 1024) KiB, \(rows) rows at 80 columns; parse \(median(parse)), layout \(median(layout)), draw all screens \(median(draw)) (median of \(runs))")
}

let arguments = Array(CommandLine.arguments.dropFirst())
let blocks = Int(arguments.first ?? "") ?? 1000
if arguments.count > 1 {
    // One kind once (for counting instructions): `bench 1000 plain` or `bench 1000 highlighted`.
    measure(arguments[1], document(languages: arguments[1] == "highlighted", blocks: blocks), runs: 1)
} else {
    for _ in 0..<2 {
        measure("plain      ", document(languages: false, blocks: blocks), runs: 7)
        measure("highlighted", document(languages: true, blocks: blocks), runs: 7)
    }
}
