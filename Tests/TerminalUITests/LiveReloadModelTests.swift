import ScrollModel
import Testing
@testable import TerminalUI

/// Live reload in the model (issue 47.10), without a terminal: a saved file's text replaces the
/// presenter's, the place is kept by anchor (or the nearest block left), and the room hears the
/// text, then the place.
@Suite("Live reload (model)")
struct LiveReloadModelTests {
    static func talk(zero: Bool, two: Bool) -> String {
        func section(_ name: String) -> String { "## \(name)\n\n" + (1...3).map { "\(name) paragraph \($0) with a few words." }.joined(separator: "\n\n") + "\n\n" }
        return "# Talk\n\n" + (zero ? section("Zero") : "") + section("One") + (two ? section("Two") : "") + section("Three")
    }

    /// A driving presenter at 40 × 8 whose top block is `id`.
    static func presenter(at id: String) -> ViewerModel {
        var model = ViewerModel.presenter(room: "r", name: "talk.md", format: .markdown, text: talk(zero: false, two: true), width: 40, height: 8)
        _ = update(&model, .connection(.connected))
        _ = update(&model, welcome(you: "me", driver: "me"))
        _ = update(&model, .clock(1_000))
        model.top = model.layout!.row(for: Anchor(id: id, fraction: 0))!
        return model
    }

    @Test func theBlockOnTopStaysOnTopAndTheRoomHearsTextThenPlace() throws {
        var model = Self.presenter(at: "two")
        let text = Self.talk(zero: true, two: true)
        let commands = update(&model, .documentEdited(name: "talk.md", format: .markdown, text: text))
        #expect(commands == [.send(.document(name: "talk.md", format: .markdown, text: text))])
        #expect(model.layout?.anchor(atRow: model.top)?.id == "two", "the same block on top, rows further down")
        guard case .send(.scroll(let place))? = update(&model, .clock(2_000)).first else {
            Issue.record("no place sent after the text")
            return
        }
        #expect(place.anchor?.id == "two")
        #expect(update(&model, .documentEdited(name: "talk.md", format: .markdown, text: text)).isEmpty, "the same text again: nothing")
    }

    @Test func aBlockThatIsGoneGivesWayToTheNearestOneLeft() {
        var model = Self.presenter(at: "two")
        _ = update(&model, .documentEdited(name: "talk.md", format: .markdown, text: Self.talk(zero: false, two: false)))
        #expect(model.layout?.anchor(atRow: model.top)?.id == "one.3", "the block before the section that went")
    }

    @Test func anUnreadableSaveIsSaidAndChangesNothing() {
        var model = Self.presenter(at: "two")
        let before = model.layout?.document.fingerprint
        #expect(update(&model, .documentUnreadable("reload: talk.md is not UTF-8 text; showing the last version")).isEmpty)
        #expect(model.notice?.hasPrefix("reload:") == true && model.layout?.document.fingerprint == before)
    }

    /// A save that could not be read, then the file put back as it was shown (the same text):
    /// the warning goes (it stayed `⚠ reload` until the next real change).
    @Test func theWarningGoesWhenTheFileIsReadableAgain() {
        var model = Self.presenter(at: "two")
        _ = update(&model, .documentUnreadable("reload: talk.md is not UTF-8 text; showing the last version"))
        #expect(status(model).contains("⚠ reload"))
        let commands = update(&model, .documentEdited(name: "talk.md", format: .markdown, text: Self.talk(zero: false, two: true)))
        #expect(commands.isEmpty, "the same text: nothing to share")
        #expect(model.notice == nil && !status(model).contains("⚠"), "\(status(model))")
    }
}
