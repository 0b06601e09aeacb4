import Foundation
import ScrollModel
import Testing
@testable import TerminalUI

func welcome(you: String, driver: String?, state: ScrollState? = nil, doc: String? = nil) -> ViewerMessage {
    .server(.welcome(.init(room: "r", you: you, role: .follower, state: state, driver: driver, presence: Presence(), doc: doc)))
}

@Suite("Presenter model")
struct PresenterModelTests {
    func presenter() -> ViewerModel {
        var model = ViewerModel.presenter(room: "r", name: "guide.md", format: .markdown, text: sample, width: 40, height: 12)
        _ = update(&model, .connection(.connected))
        return model
    }

    @Test func sharesTheDocumentOnWelcomeAndSendsItsPlace() {
        var model = presenter()
        let commands = update(&model, welcome(you: "me", driver: "me"))
        #expect(commands == [.send(.document(name: "guide.md", format: .markdown, text: sample))])
        guard case .send(.scroll(let update))? = ScrollSyncTestSupport.first(update(&model, .clock(1_000))) else {
            Issue.record("no scroll sent")
            return
        }
        #expect(update.offset == 0)
        #expect(update.viewport == 10)
        #expect(update.content == Double(model.layout!.rowCount))
        #expect(update.anchor?.id == "scrollsync-guide")
        #expect(update.t == "1000")
    }

    @Test func movesAreCoalescedToSixtyPerSecond() {
        var model = presenter()
        _ = update(&model, welcome(you: "me", driver: "me"))
        _ = update(&model, .clock(1_000))
        for _ in 0..<5 { _ = update(&model, .key(.character("j"))) }
        #expect(model.top == 5)
        #expect(model.direction == .down)
        #expect(update(&model, .clock(1_005)).isEmpty, "within 16 ms of the last update")
        let sent = update(&model, .clock(1_020))
        guard case .send(.scroll(let scroll))? = sent.first else { Issue.record("nothing sent"); return }
        #expect(scroll.offset == 5, "one update carries the newest place")
        #expect(update(&model, .clock(1_100)).isEmpty, "nothing new to send")
    }

    @Test func keysMoveTheView() {
        var model = presenter()
        _ = update(&model, .key(.character("G")))
        #expect(model.top == model.maxTop)
        _ = update(&model, .key(.character("g")))
        #expect(model.top == 0)
        _ = update(&model, .key(.pageDown))
        #expect(model.top == model.viewport - 1)
        _ = update(&model, .key(.character("k")))
        #expect(model.direction == .up)
        _ = update(&model, .key(.home))
        _ = update(&model, .key(.character("n")))
        #expect(model.layout!.rows[model.top].text == "Install", "n snaps to the next heading")
        #expect(update(&model, .key(.character("q"))) == [.quit])
        #expect(update(&model, .key(.interrupt)) == [.quit])
    }

    @Test func doesNotSendWhileSomeoneElseDrives() {
        var model = presenter()
        _ = update(&model, welcome(you: "me", driver: "other"))
        _ = update(&model, .key(.character("j")))
        #expect(update(&model, .clock(5_000)).isEmpty)
        #expect(update(&model, .key(.character("t"))) == [.send(.control(take: true))])
        _ = update(&model, .server(.driver("me", name: nil)))
        guard case .send(.scroll)? = update(&model, .clock(6_000)).first else { Issue.record("no scroll after taking control"); return }
    }
}

/// Issue 27.1–2: presenters hand over without moving the audience.
@Suite("Presenters hand over")
struct PresenterHandOverTests {
    static func roomState(_ seq: Int, at block: String, by driver: String = "other") -> ScrollState {
        ScrollState(seq: seq, offset: 0, viewport: 30, content: 300, progress: 0.5, direction: .down, anchor: Anchor(id: block, fraction: 0),
                    atTop: false, atBottom: false, by: driver, t: nil, doc: nil)
    }

    func presenter() -> ViewerModel {
        var model = ViewerModel.presenter(room: "r", name: "guide.md", format: .markdown, text: sample, width: 40, height: 12)
        _ = update(&model, .connection(.connected))
        return model
    }

    @Test func aPresenterWhoDoesNotDriveFollowsTheDriverAndTakesOverFromThere() throws {
        var model = presenter()
        _ = update(&model, welcome(you: "me", driver: "other"))
        _ = update(&model, .server(.state(Self.roomState(7, at: "install"))))
        let installRow = try #require(model.layout?.row(for: Anchor(id: "install", fraction: 0)))
        #expect(model.top == installRow, "it follows the driver's block")
        #expect(statusFields(model).first?.text.hasPrefix("PRESENTER, FOLLOWING") == true)
        #expect(update(&model, .key(.character("t"))) == [.send(.control(take: true))])
        _ = update(&model, .server(.driver("me", name: nil)))
        guard case .send(.scroll(let scroll))? = update(&model, .clock(9_000)).first else { Issue.record("no scroll"); return }
        #expect(scroll.offset == Double(installRow) && scroll.anchor?.id == "install", "t sends the room's place, not a stale one of its own")
    }

    @Test func aPresenterWhoScrollsAloneIsDetachedAndFGoesBack() throws {
        var model = presenter()
        _ = update(&model, welcome(you: "me", driver: "other"))
        _ = update(&model, .server(.state(Self.roomState(7, at: "install"))))
        let installRow = model.top
        _ = update(&model, .key(.character("g")))
        #expect(!model.following && model.top == 0)
        _ = update(&model, .server(.state(Self.roomState(8, at: "install"))))
        #expect(model.top == 0, "detached: the driver's moves do not move it")
        #expect(update(&model, .key(.character("f"))).isEmpty, "f is local for a presenter")
        #expect(model.top == installRow)
    }

    @Test func aPresenterJoiningARoomWithAPlaceStartsThereAndSendsNothingUntilItMoves() throws {
        var model = presenter()
        let commands = update(&model, welcome(you: "me", driver: "me", state: Self.roomState(40, at: "install", by: "me")))
        #expect(commands == [.send(.document(name: "guide.md", format: .markdown, text: sample))], "only the document")
        #expect(model.top == model.layout?.row(for: Anchor(id: "install", fraction: 0)))
        #expect(update(&model, .clock(1_000)).isEmpty && update(&model, .clock(2_000)).isEmpty, "no scroll until it moves")
        _ = update(&model, .key(.character("j")))
        guard case .send(.scroll)? = update(&model, .clock(3_000)).first else { Issue.record("a move is sent"); return }
    }

    @Test func losingControlMakesThePresenterFollowTheNewDriver() {
        var model = presenter()
        _ = update(&model, welcome(you: "me", driver: "me"))
        _ = update(&model, .key(.character("G")))
        _ = update(&model, .server(.driver("other", name: "Bob")))
        _ = update(&model, .server(.state(Self.roomState(9, at: "install"))))
        #expect(model.top == model.layout?.row(for: Anchor(id: "install", fraction: 0)))
    }
}

@Suite("Follower model")
struct FollowerModelTests {
    static let document = Document(text: sample, format: .markdown, name: "guide.md")

    func state(_ seq: Int, anchor: Anchor?, progress: Double? = nil, offset: Double = 0, direction: Direction = .down, t: String? = nil) -> ScrollState {
        ScrollState(seq: seq, offset: offset, viewport: nil, content: nil, progress: progress, direction: direction, anchor: anchor,
                    atTop: false, atBottom: false, by: "p", t: t, doc: nil)
    }

    @Test func followsByAnchorThenProgressThenOffset() {
        var model = ViewerModel.follower(room: "r", localDocument: Self.document, width: 40, height: 12)
        let layout = model.layout!
        _ = update(&model, .server(.state(state(1, anchor: Anchor(id: "install.1", fraction: 0.5)))))
        #expect(model.top == layout.row(for: Anchor(id: "install.1", fraction: 0.5)))
        _ = update(&model, .server(.state(state(2, anchor: Anchor(id: "unknown", fraction: 0), progress: 1))))
        #expect(model.top == model.maxTop)
        _ = update(&model, .server(.state(state(3, anchor: nil, offset: 3, direction: .up))))
        #expect(model.top == 3)
        #expect(model.direction == .up)
    }

    /// Any finite offset a server sends is a place: past the end is the end, below 0 the
    /// top (1e300 once trapped converting to Int).
    @Test(arguments: [("1e300", true), ("-1e300", false), ("9223372036854775808", true), ("-0.4", false)])
    func anyOffsetAServerSendsIsAPlace(_ offset: String, _ atEnd: Bool) throws {
        var model = ViewerModel.follower(room: "r", localDocument: Self.document, width: 40, height: 12)
        _ = update(&model, .server(.state(state(1, anchor: nil, offset: 5))))
        let hostile = try #require(try ServerEvent.decode(#"{"type":"state","seq":2,"offset":\#(offset)}"#))
        guard case .state = hostile else { Issue.record("not a state: \(hostile)"); return }
        _ = update(&model, .server(hostile))
        #expect(model.maxTop > 0 && model.top == (atEnd ? model.maxTop : 0), "offset \(offset): top \(model.top) of \(model.maxTop)")
    }

    /// Issue 18.9: a room that is live without a document (the presenter's was refused as
    /// too large) does not leave the follower waiting in silence; every line fits.
    @Test(arguments: [30, 80])
    func aLiveRoomWithoutADocumentSaysWhatToDo(width: Int) {
        var model = ViewerModel.follower(room: "r", localDocument: nil, width: width, height: 12)
        func words(_ lines: [String]) -> String { lines.map { InlineMarkup.plain($0) }.joined(separator: " ").split(separator: " ").joined(separator: " ") }
        let before = words(view(model).lines)
        #expect(before.contains("waiting for the room's document") && !before.contains("--doc"), "connecting: only waiting")
        _ = update(&model, .connection(.connected))
        _ = update(&model, welcome(you: "f", driver: "p", state: state(1, anchor: nil, offset: 5)))
        let lines = view(model).lines
        let text = words(lines)
        #expect(text.contains("size limit"), "\(lines)")
        #expect(text.contains("--doc FILE"), "\(lines)")
        #expect(lines.allSatisfy { DisplayWidth.of(InlineMarkup.plain($0.replacingOccurrences(of: "\u{1B}[7m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: ""))) <= width })
    }

    @Test func localScrollingDetachesAndFResumes() {
        var model = ViewerModel.follower(room: "r", localDocument: Self.document, width: 40, height: 12)
        _ = update(&model, .server(.state(state(1, anchor: nil, offset: 4))))
        #expect(update(&model, .key(.character("j"))) == [.send(.follow(false))])
        #expect(!model.following)
        #expect(status(model).contains("DETACHED"))
        _ = update(&model, .server(.state(state(2, anchor: nil, offset: 8))))
        #expect(model.top == 5, "a detached follower stays where it is")
        #expect(update(&model, .key(.character("f"))) == [.send(.follow(true))])
        #expect(model.top == 8, "f jumps back to the presenter")
    }

    @Test func rendersTheRoomsDocumentWhenItArrives() {
        var model = ViewerModel.follower(room: "r", localDocument: nil, width: 60, height: 12)
        #expect(view(model).lines[1].contains("waiting for the room's document"))
        _ = update(&model, .server(.state(state(1, anchor: Anchor(id: "install", fraction: 0)))))
        _ = update(&model, .server(.document(SharedDocument(name: "guide.md", format: .markdown, text: sample, by: "p"))))
        #expect(model.layout?.rows[model.top].text == "Install")
        #expect(!view(model).lines[0].contains("›"), "the heading on the top row is not repeated above it: \(view(model).lines[0])")
        _ = update(&model, .server(.state(state(2, anchor: Anchor(id: "install", fraction: 0.5)))))
        #expect(model.layout?.rows[model.top].text != "Install")
        #expect(view(model).lines[0].contains("ScrollSync Guide › Install"), "sticky header with the title folded in")
    }

    @Test func flagsALocalCopyThatDiffers() {
        var model = ViewerModel.follower(room: "r", localDocument: Self.document, width: 100, height: 12)
        _ = update(&model, welcome(you: "f", driver: "p", doc: Fingerprint.of(sample)))
        #expect(!model.documentDiffers)
        _ = update(&model, welcome(you: "f", driver: "p", doc: Fingerprint.of("another text")))
        #expect(model.documentDiffers)
        #expect(status(model).contains("DOCUMENT DIFFERS"))
    }

    /// No progress where there is none to show: the waiting screen, a document that fits.
    /// A refused message is said before the room's details, not cut off at the far right.
    @Test func statusShowsOnlyNumbersThatMeanSomething() {
        var waiting = ViewerModel.follower(room: "r", localDocument: nil, width: 120, height: 30)
        _ = update(&waiting, .connection(.connected))
        #expect(!status(waiting).contains("%"), "\(status(waiting))")
        var short = ViewerModel.follower(room: "r", localDocument: Document(text: "one line", format: .text, name: "s"), width: 120, height: 30)
        _ = update(&short, .connection(.connected))
        #expect(status(short).contains("all") && !status(short).contains("100%"), "\(status(short))")
        _ = update(&short, .server(.error(code: "too_large", message: "document over 1 MiB")))
        let line = status(short)
        #expect(line.contains("too_large") && line.range(of: "too_large")!.lowerBound < line.range(of: "follower")!.lowerBound, "\(line)")
    }

    /// The status line says the link's round trip and, apart, how long ago the presenter
    /// moved (issue 18.4: it showed the age of the last state as "latency").
    @Test func statusSaysRoundTripAndWhenThePresenterMoved() {
        var model = ViewerModel.follower(room: "r", localDocument: Self.document, width: 100, height: 12)
        _ = update(&model, .connection(.connected))
        _ = update(&model, .clock(10_000))
        _ = update(&model, welcome(you: "f", driver: "p", state: state(1, anchor: nil, t: "1")))
        #expect(!status(model).contains("moved"), "a welcome says where the room is, not when it moved: \(status(model))")
        _ = update(&model, .roundTrip(milliseconds: 3))
        #expect(status(model).contains("rtt 3 ms"))
        _ = update(&model, .server(.state(state(2, anchor: nil, t: "5"))))
        #expect(status(model).contains("moved just now"), "\(status(model))")
        _ = update(&model, .clock(17_400))
        #expect(status(model).contains("moved 7 s ago"), "\(status(model))")
        _ = update(&model, .connection(.waiting(retryIn: 7.3, reason: "x")))
        #expect(!status(model).contains("rtt"), "no stale round trip while offline")
        #expect(status(model).hasPrefix(" ○ offline 7.3 s"), "offline first, in short: \(status(model))")
        #expect(statusDetails(model) == ["○ offline, retry in 7.3 s (x)"], "the full form above it")
        _ = update(&model, .clock(19_400))
        #expect(status(model).contains("offline 5.3 s"), "the countdown counts: \(status(model))")
    }

    @Test func resizeKeepsTheAnchorAtTheTop() throws {
        var model = ViewerModel.follower(room: "r", localDocument: Self.document, width: 40, height: 12)
        _ = update(&model, .key(.character("n")))
        _ = update(&model, .key(.character("j")))
        let anchor = try #require(model.layout?.anchor(atRow: model.top))
        _ = update(&model, .resize(width: 133, height: 6))
        #expect(model.layout?.width == 133)
        #expect(model.layout?.rows[model.top].block == model.layout?.row(for: anchor).map { model.layout!.rows[$0].block })
        #expect(view(model).lines.count == 6)
        #expect(view(model).lines.allSatisfy { DisplayWidth.of($0.replacing(/\u{1B}\[[0-9;]*m/, with: "")) == 133 })
    }
}

@Suite("Keys and rendering")
struct KeyAndRendererTests {
    @Test func decodesKeys() {
        let bytes: [UInt8] = [0x6A, 0x1B, 0x5B, 0x41, 0x1B, 0x5B, 0x36, 0x7E, 0x03, 0x1B, 0x4F, 0x42, 0x20] + Array("é".utf8)
        #expect(KeyDecoder.decode(bytes) == [.character("j"), .up, .pageDown, .interrupt, .down, .character(" "), .character("é")])
    }

    @Test func rendererWritesOnlyChangedLines() {
        var renderer = Renderer()
        let first = renderer.diff(to: Screen(lines: ["a", "b", "c"]))
        #expect(first.contains("\u{1B}[1;1Ha") && first.contains("\u{1B}[3;1Hc"))
        #expect(renderer.diff(to: Screen(lines: ["a", "B", "c"])) == "\u{1B}[2;1HB")
        #expect(renderer.diff(to: Screen(lines: ["a", "B", "c"])) == "")
    }
}

enum ScrollSyncTestSupport {
    static func first(_ commands: [ViewerCommand]) -> ViewerCommand? { commands.first }
}
