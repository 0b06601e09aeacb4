import Foundation
import Testing

extension Tmux {
    /// The screen with its styles, as tmux writes them again (its own SGR sequences).
    var styledScreen: [String] {
        ((try? run("tmux", Self.socket + ["capture-pane", "-p", "-e", "-t", name]).output) ?? "").split(separator: "\n").map(String.init)
    }
}

/// Issue 47.13 under a real terminal: `present` shows fenced code in colour at 40, 80 and
/// 120 columns, and code in no known language in the cyan of before.
@Suite("Highlighted code under tmux", .serialized)
struct CodeColourTmuxTests {
    /// The SGR parameters set just before `token` on `line` (the run of sequences before it).
    static func attributes(before token: String, in line: String) -> Set<Substring> {
        guard let range = line.range(of: token) else { return [] }
        var parameters = Set<Substring>()
        var head = line[..<range.lowerBound]
        while head.hasSuffix("m"), let start = head.range(of: "\u{1B}[", options: .backwards) {
            let sequence = head[start.upperBound...].dropLast()
            guard sequence.allSatisfy({ $0.isNumber || $0 == ";" }) else { break }
            parameters.formUnion(sequence.split(separator: ";"))
            head = head[..<start.lowerBound]
        }
        return parameters
    }

    @Test(arguments: [40, 80, 120])
    func presentShowsCodeInColour(_ width: Int) throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("code-\(UUID().uuidString.prefix(6)).md")
        try "# Colours\n\n```swift\nlet answer = 42 // why\n```\n\n```\nunknown = 7\n```\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let presenter = try Tmux([ServerProcess.binary.path, "present", "\(server.url)/rooms/code-\(UUID().uuidString.prefix(6))", file.path, "--key", "k"],
                                 width: width, height: 12)
        presenter.wait(timeout: 30) { $0.statusLine.contains("PRESENTING") && $0.joined().contains("unknown = 7") }
        let screen = presenter.styledScreen
        let code = try #require(screen.first { $0.contains("answer") }, "\(screen.joined(separator: "\n"))")
        #expect(Self.attributes(before: "let", in: code).isSuperset(of: ["1", "35"]), "keyword bold magenta: \(code.debugDescription)")
        #expect(Self.attributes(before: "42", in: code).contains("31"), "number red: \(code.debugDescription)")
        #expect(Self.attributes(before: "// why", in: code).isSuperset(of: ["2", "3"]), "comment dim italic: \(code.debugDescription)")
        #expect(!Self.attributes(before: " answer", in: code).contains("36"), "plain code in the terminal's colour")
        let plain = try #require(screen.first { $0.contains("unknown") })
        #expect(Self.attributes(before: "  unknown", in: plain).contains("36"), "no language: cyan as before: \(plain.debugDescription)")
    }
}
