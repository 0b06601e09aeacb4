import Foundation
import ScrollModel
import Testing
@testable import TerminalUI

/// A follower shows the presenter's place at every width, and both ends line up
/// (issue 18.1, 18.2, 18.3, 18.5; PROTOCOL.md §3, "Following a state").
@Suite("Follow fidelity")
struct FollowFidelityTests {
    static let tour: String = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Examples/tour.md")
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }()

    /// The state a presenter at 120 × 30 sends after `keys`, made as the server makes it.
    static func presenterStates(keys: [Key]) -> [(key: Key, state: ScrollState, block: String, model: ViewerModel)] {
        var presenter = ViewerModel.presenter(room: "r", name: "tour.md", format: .markdown, text: tour, width: 120, height: 30)
        _ = update(&presenter, .connection(.connected))
        _ = update(&presenter, .server(.welcome(.init(room: "r", you: "p", role: .presenter, state: nil, driver: "p", presence: Presence(), doc: nil))))
        var clock: Int64 = 1_000
        var previous: ScrollState?
        var out = [(Key, ScrollState, String, ViewerModel)]()
        for key in keys {
            _ = update(&presenter, .key(key))
            clock += 100
            for command in update(&presenter, .clock(clock)) {
                guard case .send(.scroll(let scroll)) = command else { continue }
                let state = ScrollState.next(after: previous, applying: scroll, by: "p", doc: nil)
                previous = state
                guard let layout = presenter.layout, presenter.top < layout.rowCount else {
                    Issue.record("the presenter has no row at its top after \(key)")
                    continue
                }
                out.append((key, state, layout.document.blocks[layout.rows[presenter.top].block].id, presenter))
            }
        }
        return out
    }

    static func follower(width: Int, height: Int = 24) -> ViewerModel {
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: tour, format: .markdown, name: "tour.md"), width: width, height: height)
        _ = update(&model, .connection(.connected))
        return model
    }

    /// The ids of the blocks the follower shows.
    static func visibleBlocks(_ model: ViewerModel) -> Set<String> {
        guard let layout = model.layout else {
            Issue.record("the follower has no layout")
            return []
        }
        return Set((model.top..<min(layout.rowCount, model.top + model.viewport)).map { layout.document.blocks[layout.rows[$0].block].id })
    }

    @Test(arguments: [30, 60, 200])
    func followersShowThePresentersBlockAndBothEnds(width: Int) {
        let keys: [Key] = [.character("j"), .character("n"), .character(" "), .character("n"), .character("k"), .character("b"),
                           .character("n"), .character("G"), .character("N"), .character("k"), .character("g"), .character("n"), .character("G")]
        var follower = Self.follower(width: width)
        for (key, state, block, presenter) in Self.presenterStates(keys: keys) {
            _ = update(&follower, .server(.state(state)))
            if state.atBottom {
                #expect(follower.top == follower.maxTop, "\(width) cols after \(key): the last line is on screen")
            } else if state.atTop {
                #expect(follower.top == 0, "\(width) cols after \(key): the first line is on screen")
            } else {
                #expect(Self.visibleBlocks(follower).contains(block), "\(width) cols after \(key): presenter's top block \(block) not shown")
            }
            _ = presenter
        }
    }

    /// Resizing a follower keeps the presenter's block in view: it maps the last state again.
    @Test func resizingKeepsThePresentersBlock() {
        let states = Self.presenterStates(keys: [.character("n"), .character("n"), .character("j"), .character("j")])
        guard let (_, state, block, _) = states.last else { Issue.record("no state"); return }
        var follower = Self.follower(width: 60)
        _ = update(&follower, .server(.state(state)))
        for width in [59, 45, 100, 31, 60] {
            _ = update(&follower, .resize(width: width, height: 24))
            #expect(Self.visibleBlocks(follower).contains(block), "at \(width) columns")
        }
        let atResizeStart = follower.top
        _ = update(&follower, .resize(width: 60, height: 24))
        #expect(follower.top == atResizeStart, "the same size maps to the same row (no drift)")
    }

    /// A detached follower keeps its own place through resizes: the block at its top stays
    /// there at every width from 30 to 200, and returning to a width returns to its row.
    @Test func resizingWhileDetachedKeepsItsOwnBlock() throws {
        var follower = Self.follower(width: 60)
        for _ in 0..<3 { _ = update(&follower, .key(.character("n"))) }
        _ = update(&follower, .key(.character("j")))
        #expect(!follower.following)
        let layout = try #require(follower.layout)
        let block = layout.document.blocks[layout.rows[follower.top].block].id
        let row = follower.top
        for width in [30, 200, 47, 121, 30, 60] {
            _ = update(&follower, .resize(width: width, height: 24))
            let resized = try #require(follower.layout)
            #expect(resized.document.blocks[resized.rows[follower.top].block].id == block, "at \(width) columns")
        }
        #expect(follower.top == row, "back at 60 columns, back on its row")
    }

    /// Taking control sends this presenter's place as soon as it drives.
    @Test func takingControlSendsThePosition() {
        var presenter = ViewerModel.presenter(room: "r", name: "tour.md", format: .markdown, text: Self.tour, width: 80, height: 24)
        _ = update(&presenter, .connection(.connected))
        _ = update(&presenter, .server(.welcome(.init(room: "r", you: "me", role: .presenter, state: nil, driver: "other", presence: Presence(), doc: nil))))
        _ = update(&presenter, .clock(1_000))
        _ = update(&presenter, .key(.character("G")))  // moves while not driving: nothing can be sent
        #expect(update(&presenter, .clock(1_100)).isEmpty)
        _ = update(&presenter, .server(.driver("other", name: "Bo")))
        #expect(update(&presenter, .key(.character("t"))) == [.send(.control(take: true))])
        _ = update(&presenter, .server(.driver("me", name: nil)))
        let sent = update(&presenter, .clock(1_200))
        guard case .send(.scroll(let scroll))? = sent.first else { Issue.record("no scroll after taking control: \(sent)"); return }
        #expect(scroll.offset == Double(presenter.maxTop))
    }

    /// A late joiner sees the driver's name from `welcome`.
    @Test func welcomeCarriesTheDriversName() throws {
        let text = String(decoding: ServerMessage.welcome(room: "r", you: "f", role: .follower, state: nil, driver: "0000000000000001",
                                                          driverName: "Ann", presence: Presence(), document: nil), as: UTF8.self)
        guard case .welcome(let welcome)? = try ServerEvent.decode(text) else { Issue.record("not a welcome"); return }
        var model = Self.follower(width: 60)
        _ = update(&model, .server(.welcome(welcome)))
        #expect(model.driverName == "Ann")
        #expect(status(model).contains("driver Ann"))
    }
}
