import ScrollModel
import Testing
@testable import TerminalUI

/// Issue 47.11: `/` and `?` search as in `less`.
@Suite("Search")
struct SearchTests {
    static let talk = "# Talk\n\n" + (1...30).map { "Paragraph \($0)." }.joined(separator: "\n\n")
        + "\n\n## Install\n\nRun the **installer** now.\n\n" + (1...30).map { "Filler \($0)." }.joined(separator: "\n\n")
        + "\n\n## Close\n\nThe installer again, and Installer once more.\n"

    static func type(_ text: String, _ model: inout ViewerModel) -> [ViewerCommand] {
        var commands = [ViewerCommand]()
        for character in text { commands += update(&model, .key(.character(character))) }
        return commands + update(&model, .key(.enter))
    }

    static func follower(width: Int = 80) -> ViewerModel {
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: talk, format: .markdown, name: "t.md"), width: width, height: 12)
        _ = update(&model, .connection(.connected))
        return model
    }

    @Test func enterJumpsToTheNextMatchAndAnEmptyPatternRepeats() throws {
        var model = Self.follower()
        let layout = try #require(model.layout)
        #expect(Self.type("/installer", &model) == [.send(.follow(false))], "searching detaches a follower")
        let first = try #require(model.search.match)
        #expect(InlineMarkup.plain(layout.rows[first.row].text) == "Run the installer now.")
        #expect(model.top == first.row, "the match's row is at the top")
        #expect(status(model).contains("/installer 1/3"), "\(status(model))")
        _ = Self.type("/", &model)
        let second = try #require(model.search.match)
        #expect(second.row > first.row && layout.rows[second.row].text.contains("again"))
        _ = Self.type("/", &model)
        #expect(model.search.match?.characters.lowerBound == 25, "smart case: lower case finds Installer too")
        _ = Self.type("/", &model)
        #expect(model.search.match == first, "wraps to the top")
        #expect(status(model).contains("wrapped"))
        _ = Self.type("?", &model)
        #expect(model.search.match?.row == second.row && model.search.match?.characters.lowerBound == 25, "? goes backwards, wrapping to the end")
        #expect(status(model).contains("?installer 3/3"), "a backward search is shown as typed: \(status(model))")
        _ = Self.type("/Installer", &model)
        #expect(model.search.match?.characters.lowerBound == 25, "a capital letter matches case")
    }

    @Test func theMatchIsHighlightedAndTheRestOfTheRowIsNot() throws {
        var model = Self.follower()
        _ = Self.type("/installer", &model)
        let row = try #require(view(model).lines.first { $0.contains("Run the") })
        #expect(row.contains("Run the \u{1B}[0m\u{1B}[1m\u{1B}[7minstaller\u{1B}[0m now."), "\(row.debugDescription)")
    }

    @Test func notFoundSaysSoAndMovesNothing() {
        var model = Self.follower(width: 20)
        _ = update(&model, .key(.character("j")))
        let top = model.top
        _ = Self.type("/nowhere", &model)
        #expect(model.top == top && model.search.match == nil)
        #expect(status(model).contains("not found"), "at 20 columns: \(status(model))")
        _ = update(&model, .key(.character("k")))
        #expect(!status(model).contains("not found"), "the next key clears it")
    }

    /// The pattern is shown safe: a control typed or pasted shows as its picture, and a
    /// document's escape bytes around a match stay pictures, never sequences.
    @Test func patternsAndMatchesNeverBecomeEscapes() throws {
        let hostile = "# T\n\nfind \u{1B}[2Jme \u{1B}]52;c;eA==\u{07} here\n"
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: hostile, format: .markdown, name: "h.md"), width: 60, height: 10)
        _ = update(&model, .key(.character("/")))
        for character in "\u{1B}[2J" { _ = update(&model, .key(.character(character))) }
        let prompt = try #require(view(model).lines.last)
        #expect(prompt.contains("/␛[2J"), "\(prompt.debugDescription)")
        _ = update(&model, .key(.enter))
        #expect(model.search.match != nil, "the picture matches the picture in the text")
        let screen = view(model).lines.joined()
        let sequences = screen.matches(of: /\u{1B}[^m]*m/).map { String($0.output) }
        #expect(Set(sequences).isSubset(of: ["\u{1B}[0m", "\u{1B}[1m", "\u{1B}[7m", "\u{1B}[4m"]), "only SGR styles: \(Set(sequences))")
        #expect(!screen.contains("\u{1B}]") && !screen.contains("\u{1B}[2J") && !screen.contains("\u{07}"))
    }

    @Test func aPresenterWhoDrivesMovesTheRoom() throws {
        var model = ViewerModel.presenter(room: "r", name: "t.md", format: .markdown, text: Self.talk, width: 80, height: 12)
        _ = update(&model, .connection(.connected))
        _ = update(&model, welcome(you: "me", driver: "me"))
        _ = update(&model, .clock(1_000))
        #expect(Self.type("/installer", &model).isEmpty)
        guard case .send(.scroll(let scroll))? = update(&model, .clock(2_000)).first else { Issue.record("no scroll"); return }
        #expect(scroll.offset == Double(model.search.match!.row) && scroll.anchor?.id == "install.1")
    }

    @Test func escapeAndBackspaceCancelAndTheHelpNamesIt() {
        var model = Self.follower()
        _ = update(&model, .key(.character("/")))
        _ = update(&model, .key(.character("q")))
        #expect(model.search.prompt == "q", "q is typed, not quit")
        _ = update(&model, .key(.backspace))
        _ = update(&model, .key(.backspace))
        #expect(!model.search.isTyping)
        _ = update(&model, .key(.character("?")))
        _ = update(&model, .key(.escape))
        #expect(!model.search.isTyping && model.top == 0)
        #expect(KeyDecoder.decode([0x2F, 0x61, 0x0D, 0x7F, 0x1B]) == [.character("/"), .character("a"), .enter, .backspace, .escape])
        _ = update(&model, .key(.character("h")))
        #expect(view(model).lines.joined().contains("search forward"))
    }
}
