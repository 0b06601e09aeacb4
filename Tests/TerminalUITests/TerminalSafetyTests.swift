import ScrollModel
import TestSupport
import Testing
import TextSafety
@testable import TerminalUI

/// What strangers send (a document, a name, a heading, a refusal's reason) never reaches the
/// terminal as a control sequence: the renderer's own style and cursor sequences are the
/// only escape sequences on screen.
@Suite("Terminal safety")
struct TerminalSafetyTests {
    /// Hostile sequences from the issue (shared with the server's terminal readers' tests).
    static let attacks = HostileText.attacks

    /// Every byte of the screen outside the renderer's own `ESC [ digits ; m|H` sequences.
    static func strayControls(_ lines: [String]) -> [Unicode.Scalar] {
        var stray = [Unicode.Scalar]()
        for line in lines {
            let rest = line.replacing(/\x{1B}\[[0-9;]*[mH]/, with: "")
            stray += rest.unicodeScalars.filter { SafeText.picture(for: $0) != nil }
        }
        return stray
    }

    /// An attack named safely in the test log too.
    struct Attack: CustomTestStringConvertible, Sendable {
        let text: String
        var testDescription: String { SafeText.display(text) }
    }

    @Test(arguments: attacks.map(Attack.init))
    func controlsBecomePictures(_ attack: Attack) {
        let attack = attack.text
        let shown = SafeText.display(attack)
        #expect(!shown.unicodeScalars.contains { SafeText.picture(for: $0) != nil }, "\(shown.debugDescription)")
        #expect(shown.unicodeScalars.count == attack.unicodeScalars.count, "one picture per scalar: nothing hidden, nothing dropped")
    }

    @Test func safeTextIsKeptAsItIs() {
        for text in ["plain", "日本語 and emoji 👩‍👩‍👧", "e\u{301}", "tab-free"] {
            #expect(SafeText.display(text) == text)
        }
        #expect(SafeText.display("\u{1B}[2J") == "\u{241B}[2J")
        #expect(SafeText.display("\u{9B}") == "\u{FFFD}")
        #expect(SafeText.display("\u{7F}") == "\u{2421}")
    }

    @Test func documentsKeepLinesAndExpandTabs() {
        #expect(SafeText.document("a\tb\r\n\tc\n") == "a   b\n    c\n")
        #expect(SafeText.document("x\u{1B}[2Jy\nz") == "x\u{241B}[2Jy\nz")
    }

    @Test func aHostileDocumentNameAndReasonRenderAsText() {
        let body = Self.attacks.enumerated().map { "# Heading \($0.offset) \($0.element)\n\nParagraph \($0.element) end.\n\n- item \($0.element)\n\n```\ncode \($0.element)\n```\n" }
            .joined(separator: "\n")
        for format in [SharedDocument.Format.markdown, .text] {
            for width in [20, 40, 80] {
                var model = ViewerModel.follower(room: "r", localDocument: nil, width: width, height: 200)
                _ = update(&model, .connection(.connected))
                _ = update(&model, .server(.welcome(.init(room: "r", you: "me", role: .follower, state: nil, driver: "d1",
                                                        presence: Presence(), doc: nil))))
                _ = update(&model, .server(.driver("d1", name: "Eve \u{1B}]52;c;aGk=\u{07}\u{1B}[2J")))
                _ = update(&model, .server(.document(SharedDocument(name: "evil\u{1B}[6n.md", format: format, text: body, by: "d1"))))
                var screens = [view(model).lines]
                for _ in 0..<40 {
                    _ = update(&model, .key(.pageDown))
                    screens.append(view(model).lines)
                }
                _ = update(&model, .connection(.refused(reason: "no \u{1B}]8;;http://x\u{07}room\u{9B}2J")))
                screens.append(view(model).lines)
                let stray = screens.flatMap { Self.strayControls($0) }
                #expect(stray.isEmpty, "\(format) at \(width) columns: \(stray.prefix(5).map { String($0.value, radix: 16) })")
                #expect(screens.joined().joined().contains("\u{241B}"), "the escape is shown, not hidden")
            }
        }
    }
}
