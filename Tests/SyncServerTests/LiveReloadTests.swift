import Foundation
import ScrollModel
import Testing

/// Live reload (issue 47.10): `present` under tmux, its file saved by an editor's two ways
/// (a new file renamed over it; a write in place). The room gets each version and the
/// presenter keeps its place by anchor — the block it was on, or the nearest left — and a
/// follower in the room moves with it.
@Suite("Live reload (issue 47.10)", .serialized)
struct LiveReloadTests {
    static func talk(zero: Bool, four: Bool) -> String {
        func section(_ name: String) -> String {
            "## \(name)\n\n" + (1...4).map { "\(name) paragraph \($0): words enough to fill a line or two of a terminal, so that each section is taller than a screen of it." }
                .joined(separator: "\n\n") + "\n\n"
        }
        return "# Talk\n\n" + (zero ? section("Zero") : "") + ["One", "Two", "Three"].map(section).joined() + (four ? section("Four") : "") + section("Five")
    }

    /// The states a follower got after message `index`, as (anchor id, offset).
    static func states(_ follower: RoomConnection, after index: Int) -> [(id: String?, offset: Double)] {
        follower.received.dropFirst(index + 1).compactMap { text in
            guard case .state(let state)? = try? ServerEvent.decode(text) else { return nil }
            return (state.anchor?.id, state.offset)
        }
    }

    @Test(arguments: [40, 80, 120])
    func aSavedFileIsSharedAndThePlaceKept(_ width: Int) throws {
        let server = try InProcessNode()
        let room = "reload-\(UUID().uuidString.prefix(6))"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(room).md").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Self.talk(zero: false, four: true).write(toFile: file, atomically: true, encoding: .utf8)
        let presenter = try Tmux([ServerProcess.binary.path, "present", "\(server.url)/rooms/\(room)", file, "--key", "k"], width: width, height: 12)
        #expect(presenter.wait { $0.statusLine.contains("PRESENTING") }.statusLine.contains("PRESENTING"))
        let follower = try RoomConnection(port: server.port, path: "/rooms/\(room)")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        for _ in 0..<4 { try presenter.keys("n") }  // One, Two, Three, Four
        #expect(follower.wait { $0.contains(#""anchor":{"id":"four""#) }, "\(follower.received.suffix(3))")
        let before = Self.states(follower, after: -1).last { $0.id == "four" }?.offset ?? -1

        // Saved as a new file renamed over the old: a section above; the place is the same block, lower down.
        try Self.talk(zero: true, four: true).write(toFile: file, atomically: true, encoding: .utf8)
        #expect(follower.wait { $0.contains(#""type":"document""#) && $0.contains("Zero paragraph") }, "the room has the new text")
        let shared = try #require(follower.received.lastIndex { $0.contains(#""type":"document""#) })
        #expect(follower.wait { _ in Self.states(follower, after: shared).contains { $0.id == "four" && $0.offset > before } },
                "the place kept by anchor, further down: before \(before), now \(Self.states(follower, after: shared))")
        let kept = presenter.wait { $0.text.dropFirst().first == "Four" }
        #expect(kept.text.dropFirst().first == "Four", "the presenter still shows Four at the top: \(kept)")

        // Written in place, the section it showed gone: the nearest block left (the one before).
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(Self.talk(zero: true, four: false).utf8))
        try handle.close()
        #expect(follower.wait { $0.contains(#""type":"document""#) && !$0.contains("Four paragraph") }, "the room has the text without Four")
        let cut = try #require(follower.received.lastIndex { $0.contains(#""type":"document""#) })
        #expect(follower.wait { _ in Self.states(follower, after: cut).contains { $0.id?.hasPrefix("three") == true } },
                "the nearest block left: \(Self.states(follower, after: cut))")
        let moved = presenter.wait { $0.header.contains("Three") }
        #expect(moved.header.contains("Three"), "\(moved)")
        try presenter.keys("q")
    }

    /// A save the presenter cannot read (not UTF-8) is said on its status line; the room keeps
    /// the last version.
    @Test func anUnreadableSaveIsSaidAndTheLastVersionKept() throws {
        let server = try InProcessNode()
        let room = "reload-\(UUID().uuidString.prefix(6))"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(room).md").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Self.talk(zero: false, four: true).write(toFile: file, atomically: true, encoding: .utf8)
        let presenter = try Tmux([ServerProcess.binary.path, "present", "\(server.url)/rooms/\(room)", file, "--key", "k"], width: 100, height: 12)
        #expect(presenter.wait { $0.statusLine.contains("PRESENTING") }.statusLine.contains("PRESENTING"))
        try Data([0x23, 0x20, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: file))
        let screen = presenter.wait { $0.joined().contains("not UTF-8") }
        #expect(screen.joined().contains("not UTF-8") && screen.joined().contains("showing the last version"), "\(screen)")
        let follower = try RoomConnection(port: server.port, path: "/rooms/\(room)")
        #expect(follower.wait { $0.contains(#""type":"document""#) && $0.contains("Four paragraph") }, "the last version stays")
        try presenter.keys("q")
    }
}
