import ScrollModel
import Testing
@testable import TerminalUI

@Suite("The status line at any width")
struct StatusLineTests {
    static func connectedFollower(width: Int) -> ViewerModel {
        var model = ViewerModel.follower(room: "r", localDocument: Document(text: sample, format: .markdown, name: "g.md"), width: width, height: 12)
        _ = update(&model, .connection(.connected))
        _ = update(&model, .server(.welcome(.init(room: "r", you: "me", role: .follower, state: nil, driver: "d1", driverName: "Ann Example",
                                                   presence: Presence(presenters: 1, followers: 3, detached: 1), doc: nil))))
        _ = update(&model, .roundTrip(milliseconds: 3))
        return model
    }

    static func presenter(width: Int) -> ViewerModel {
        var model = ViewerModel.presenter(room: "r", name: "guide.md", format: .markdown, text: sample, width: width, height: 12)
        _ = update(&model, .connection(.connected))
        _ = update(&model, welcome(you: "me", driver: "other"))
        return model
    }

    @Test(arguments: [24, 40, 60, 80, 200])
    func fieldsAreLeftOutWholeNeverCut(_ width: Int) {
        var model = Self.connectedFollower(width: width)
        _ = update(&model, .key(.character("G")))
        let line = status(model)
        let fields = statusFields(model)
        let forms = fields.flatMap { $0.forms.map(\.text) }
        #expect(DisplayWidth.of(line) <= max(width, DisplayWidth.of(" " + fields[0].forms.last!.text)), "\(width): \(line)")
        // Every field shown is whole: the line is the kept forms joined.
        let shown = line.dropFirst().components(separatedBy: "  ")
        #expect(shown.allSatisfy { forms.contains($0) }, "\(width): \(line)")
        #expect(fields[0].forms.map(\.text).contains(shown[0]), "the role always shows")
        if width >= 200 { #expect(shown.count == fields.count) }
        if width == 40 { #expect(!line.contains("§") && line.contains("● live"), "\(line)") }
    }

    /// Issue 47.1: offline shows at every width from 20 columns, first, in a short form; the
    /// full reason is on the status line where it fits, else on the row above it.
    @Test(arguments: [20, 40, 80, 120])
    func offlineShowsFirstAtEveryWidth(_ width: Int) {
        var model = Self.connectedFollower(width: width)
        _ = update(&model, .clock(10_000))
        let reason = "connect to 127.0.0.1:9 failed: Connection refused (errno 111)"
        _ = update(&model, .connection(.waiting(retryIn: 0.8, reason: reason)))
        let line = status(model)
        #expect(line.hasPrefix(" ○ offline"), "\(width): \(line)")
        #expect(line.contains("0.8 s"), "the countdown shows: \(line)")
        #expect(DisplayWidth.of(line) <= width, "\(width): \(line)")
        let screen = view(model).lines.map(Self.plain)
        let lastRows = screen.suffix(4).joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(lastRows.contains("errno 111"), "the full reason is on screen at \(width): \(screen.suffix(4))")
        if width >= 40 { #expect(line.contains("FOLLOWING"), "the role after the problem: \(line)") }
        #expect(screen.allSatisfy { DisplayWidth.of($0) == width }, "every row fits: \(screen)")
    }

    /// Issue 47.1: a presenter refused for a wrong key is told so at every width, and is not
    /// offered `t: take control`, which cannot work.
    @Test(arguments: [20, 40, 80, 120])
    func aWrongKeyShowsAtEveryWidthWithoutAKeyThatCannotWork(_ width: Int) {
        var model = Self.presenter(width: width)
        _ = update(&model, .connection(.refused(reason: "wrong or missing presenter key for room r")))
        let line = status(model)
        #expect(line.hasPrefix(" ✕ "), "\(width): \(line)")
        #expect(line.contains("wrong key") || line.contains("wrong or missing presenter key"), "\(width): \(line)")
        #expect(!view(model).lines.joined().contains("take control"), "\(width): \(line)")
        let screen = view(model).lines.map(Self.plain).joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(screen.contains("wrong or missing presenter key for room r"), "the full reason at \(width)")
        #expect(screen.contains("press q"))
    }

    /// Issue 47.1 as the server says it: the error (`unauthorized: …`) comes before the
    /// refusal with the same reason. At every width from 20 columns the refusal's short form
    /// comes first (`⚠ unauthorized` took its place at 20), the reason is said once, and a
    /// presenter that never joined shows no driver or followers (it showed `nobody driving`
    /// while another presenter drove).
    @Test(arguments: [20, 40, 80, 120, 150])
    func aRefusalAfterItsErrorIsSaidOnceAndFirst(_ width: Int) {
        var model = ViewerModel.presenter(room: "r", name: "guide.md", format: .markdown, text: sample, width: width, height: 12)
        let reason = "wrong or missing presenter key for room r"
        _ = update(&model, .server(.error(code: "unauthorized", message: reason)))
        _ = update(&model, .connection(.refused(reason: reason)))
        let line = status(model)
        #expect(line.hasPrefix(" ✕ wrong"), "\(width): \(line)")
        #expect(!line.contains("⚠"), "the error repeats the refusal: \(line)")
        #expect(!line.contains("driving") && !line.contains("follower"), "never joined: \(line)")
        let screen = view(model).lines.map(Self.plain).joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(screen.components(separatedBy: "wrong or missing").count == 2, "the reason once at \(width): \(screen)")
    }

    /// A follower still connecting, or offline before it ever joined, shows no room values
    /// that look real; once it joined, offline keeps what it last knew.
    @Test func roomFieldsOnlyOnceTheRoomAnswered() {
        var model = ViewerModel.follower(room: "r", localDocument: nil, width: 120, height: 12)
        #expect(!status(model).contains("driving") && !status(model).contains("follower"), "\(status(model))")
        _ = update(&model, .connection(.waiting(retryIn: 1, reason: "connect failed")))
        #expect(!status(model).contains("driving") && !status(model).contains("follower"), "\(status(model))")
        var joined = Self.connectedFollower(width: 120)
        _ = update(&joined, .connection(.waiting(retryIn: 1, reason: "connect failed")))
        #expect(status(joined).contains("driver Ann Example") && status(joined).contains("3 followers"), "\(status(joined))")
    }

    /// An error the server answered (a refused message) shows at every width too.
    @Test(arguments: [20, 40, 80, 120])
    func anErrorShowsAtEveryWidth(_ width: Int) {
        var model = Self.connectedFollower(width: width)
        _ = update(&model, .server(.error(code: "too_large", message: "document over 1 MiB")))
        let line = status(model)
        #expect(line.hasPrefix(" ⚠ too_large"), "\(width): \(line)")
        let screen = view(model).lines.map(Self.plain).joined(separator: " ")
        #expect(screen.contains("document over 1 MiB"), "\(width)")
    }

    @Test func shortRefusalsNameTheCause() {
        #expect(shortRefusal("wrong or missing presenter key for room r") == "wrong key")
        #expect(shortRefusal("wrong follow key for room r") == "wrong key")
        #expect(shortRefusal("room r is private: follow it with its follow key (followKey=…)") == "needs follow key")
        #expect(shortRefusal("HTTP 403 Forbidden: this token is for a follower") == "token refused")
        #expect(shortRefusal("HTTP 400 Bad Request: room names are 1 to 64 characters") == "refused (400)")
    }

    /// A screen row without its styles.
    static func plain(_ line: String) -> String { line.replacing(/\u{1B}\[[0-9;]*m/, with: "") }
}
