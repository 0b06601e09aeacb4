import Foundation
import Testing

/// The man pages `Scripts/package` installs (issue 47.7), made by `Scripts/man-pages` from the
/// binary's own help and rendered by groff as `man` renders them: named as git names its
/// pages, with an overview, examples and every exit status README documents, and no
/// character lost (`…`, `←/→`).
@Suite("Man pages and help (issue 47.7)")
struct ManualPageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each page, rendered: file name → text.
    static func pages() throws -> [String: String] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("man-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let made = try run(root.appendingPathComponent("Scripts/man-pages").path, [ServerProcess.binary.path, directory, "--date", "2026-11-28"])
        guard made.status == 0 else { throw Failure("Scripts/man-pages failed: \(made.output)") }
        var pages = [String: String]()
        for file in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let path = directory + "/" + file
            let rendered = try run("groff", ["-man", "-Tutf8", "-P-cbou", "-rLL=400n", "-rHY=0", "-ww", path])
            guard rendered.status == 0, !rendered.output.contains(": warning") else { throw Failure("groff \(file): \(rendered.output)") }
            pages[file] = rendered.output
        }
        return pages
    }

    @Test func pagesAreNamedAsGitNamesItsPages() throws {
        let names = Set(try Self.pages().keys)
        for command in ["serve", "present", "follow", "drive", "load", "record", "play", "replay", "token", "config", "config-check", "config-defaults"] {
            #expect(names.contains("scrollsync-\(command).1"), "scrollsync-\(command).1 in \(names.sorted())")
        }
        #expect(names.contains("scrollsync.1"))
        #expect(!names.contains { $0.dropLast(2).contains(".") }, "no scrollsync.serve.1: \(names.sorted())")
    }

    @Test func theMainPageHasAnOverviewExamplesAndEveryExitStatus() throws {
        let pages = try Self.pages()
        let main = try #require(pages["scrollsync.1"])
        #expect(main.contains("everyone in the room follows it live"), "an overview: \(main)")
        #expect(main.contains("EXAMPLES") && main.contains("scrollsync present ws://127.0.0.1:8080/rooms/demo"), "\(main)")
        #expect(main.contains("scrollsync-serve(1)"), "the commands' pages are named")
        for page in pages.values {
            let status = page.components(separatedBy: "EXIT STATUS").last ?? ""
            for code in ["0", "1", "64", "65", "78"] {
                #expect(status.range(of: #"(?m)^\s+\#(code)\s"#, options: .regularExpression) != nil,
                        "exit status \(code) in \(page.prefix(60))")
            }
            #expect(!page.contains(">0"), "no vague >0")
        }
        let serve = try #require(pages["scrollsync-serve.1"])
        #expect(serve.contains("SCROLLSYNC-SERVE(1)") && serve.contains("scrollsync-serve - Run the ScrollSync server"), "\(serve.prefix(300))")
    }

    @Test func charactersBeyondASCIISurvive() throws {
        let pages = try Self.pages()
        #expect(pages["scrollsync-present.1"]?.contains("recording?key=…") == true, "\(pages["scrollsync-present.1"] ?? "")")
        #expect(pages["scrollsync-play.1"]?.contains("←/→") == true, "\(pages["scrollsync-play.1"] ?? "")")
    }

    /// `present --help` names every key the presenter has (its man page too).
    @Test func presentHelpListsEveryKey() throws {
        // Help wraps at 80 columns and the page as groff fills it: compared with white space folded.
        func folded(_ text: String) -> String { text.replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression) }
        let help = folded(try run(ServerProcess.binary.path, ["present", "--help"]).output)
        let page = try #require(try Self.pages()["scrollsync-present.1"])
        for key in ["j/k", "↓/↑", "space/PgDn", "b/PgUp", "g/Home", "G/End", "n/N", "/ and ?", "Esc", "t (take control)",
                    "f (follow the driver again", "h or F1", "q or Ctrl-C"] {
            #expect(help.contains(key), "present --help lacks \(key): \(help)")
            #expect(folded(page).contains(key), "the man page lacks \(key)")
        }
    }
}
