import Bytes
import ScrollModel
import TerminalFrames
import TerminalUI
import Testing

@Suite("Terminal frames: sizes and one render per size")
struct RoomScreensTests {
    @Test(arguments: [
        ("80", "24", ScreenSize(columns: 80, rows: 24)), (nil, nil, ScreenSize(columns: 80, rows: 24)),
        ("5", "1", ScreenSize(columns: 20, rows: 5)), ("100000", "999999", ScreenSize(columns: 400, rows: 200)),
        ("120", nil, ScreenSize(columns: 120, rows: 24)),
        // A whole number of any length is clamped, not refused as "not a whole number".
        ("1234567", "00000000000000000000000000000007", ScreenSize(columns: 400, rows: 7)),
        (String(repeating: "9", count: 40), "0", ScreenSize(columns: 400, rows: 5)),
    ] as [(String?, String?, ScreenSize)])
    func sizesAreClampedToWhatIsRendered(columns: String?, rows: String?, expected: ScreenSize) throws {
        #expect(try ScreenSize.parse(columns: columns, rows: rows).get() == expected)
    }

    @Test(arguments: ["", "-3", "1e3", "80x", "\u{1B}[2J", "+80", " 80", "８０"])
    func aSizeThatIsNoNumberIsRefusedSayingWhich(text: String) {
        guard case .failure(let malformed) = ScreenSize.parse(columns: text, rows: "24") else {
            Issue.record("\(text) was taken")
            return
        }
        #expect(malformed.message.hasPrefix("cols must be a whole number (kept within 20–400), not"), "\(malformed.message)")
        #expect(!malformed.message.contains("\u{1B}"), "no escape is echoed")
    }

    /// A full table gives a new reader the largest size inside its own, else the smallest.
    @Test func aFullTableGivesTheNearestSmallerSize() {
        var table = SizeTable(limit: 2)
        #expect(table.add(ScreenSize(columns: 80, rows: 24)) == ScreenSize(columns: 80, rows: 24))
        #expect(table.add(ScreenSize(columns: 120, rows: 40)) == ScreenSize(columns: 120, rows: 40))
        #expect(table.add(ScreenSize(columns: 200, rows: 60)) == ScreenSize(columns: 120, rows: 40))
        #expect(table.add(ScreenSize(columns: 100, rows: 30)) == ScreenSize(columns: 80, rows: 24))
        #expect(table.add(ScreenSize(columns: 60, rows: 50)) == .smallest)
        #expect(table.readers.count == 3)
        table.remove(ScreenSize(columns: 120, rows: 40))
        table.remove(ScreenSize(columns: 120, rows: 40))
        table.remove(.smallest)
        #expect(table.add(ScreenSize(columns: 200, rows: 60)) == ScreenSize(columns: 200, rows: 60), "a size freed is a slot again")
    }

    static let document = SharedDocument(name: "t.md", format: .markdown,
                                         text: "# Title\n\n" + (1...40).map { "## Part \($0)\n\nText of part \($0) that is long enough to wrap at narrow widths." }.joined(separator: "\n\n"),
                                         by: "p")

    /// Each change renders once per size, whatever the number of readers of that size; a
    /// frame is cursor home, exactly `rows` lines of `columns` columns, clear to the end.
    @Test func oneFramePerSizePerChange() {
        let screens = RoomScreens(room: "r", sizeLimit: 8, events: [.document(Self.document)]) { SharedBytesText.encode($0) }
        let sizes = [ScreenSize(columns: 40, rows: 10), ScreenSize(columns: 80, rows: 24), ScreenSize(columns: 132, rows: 43)]
        for size in sizes { for _ in 0..<5 { _ = screens.addReader(size) } }
        let first = screens.render()
        #expect(first.count == 3)
        _ = screens.post(.state(ScrollState(seq: 2, offset: 0, viewport: 24, content: 400, progress: 0.5, direction: .down,
                                            anchor: Anchor(id: "part-20", fraction: 0), atTop: false, atBottom: false, by: "p", t: nil, doc: nil)))
        let frames = screens.render()
        #expect(frames.count == 3, "one per size, not one per reader")
        for frame in frames {
            let text = String(decoding: frame.bytes.buffer, as: UTF8.self)
            #expect(text.hasPrefix("\u{1B}[H") && text.hasSuffix("\u{1B}[J"))
            let lines = text.dropFirst(3).dropLast(3).split(separator: "\r\n", omittingEmptySubsequences: false)
            #expect(lines.count == frame.size.rows)
            #expect(text.contains("Part 20"), "the presenter's section at \(frame.size)")
        }
        #expect(screens.render().isEmpty, "nothing changed: nothing rendered")
    }

    /// A reader of a room that is live without a document is told how to leave as `curl`
    /// leaves (Ctrl-C), not with a key its terminal never sends to the server (`q`).
    @Test func aRoomWithoutADocumentSaysCtrlCQuits() {
        let state = ScrollState(seq: 1, offset: 0, viewport: 24, content: 400, progress: 0, direction: .none,
                                anchor: nil, atTop: true, atBottom: false, by: "p", t: nil, doc: nil)
        let screens = RoomScreens(room: "r", sizeLimit: 8, events: [.state(state)]) { SharedBytesText.encode($0) }
        _ = screens.addReader(ScreenSize(columns: 100, rows: 24))
        let text = screens.render().map { String(decoding: $0.bytes.buffer, as: UTF8.self) }.joined()
        #expect(text.contains("waiting for the room's document"), "\(text)")
        #expect(text.contains("Ctrl-C quits.") && !text.contains("q quits"), "\(text)")
    }
}

/// Frames as their text (the server encodes them as HTTP chunks).
enum SharedBytesText {
    static func encode(_ text: String) -> SharedBytes { SharedBytes(Array(text.utf8)) }
}
