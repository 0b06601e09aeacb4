import Foundation
import ScrollModel
import Testing

/// Issue 27.1–2 under real terminals: presenters hand over without moving the audience.
@Suite("Presenters hand over under tmux", .serialized)
struct HandOverTests {
    typealias Viewer = FollowAcrossWidthsTests.Viewer

    func states(_ follower: RoomConnection) -> [JSON] {
        follower.received.compactMap { try? JSON.parse($0) }.filter { $0["type"]?.string == "state" }
    }

    /// The presenter's screen once it shows a place of its layout and stops changing.
    func settled(_ viewer: Viewer) throws -> (top: Int, blocks: [String]) {
        let screen = viewer.tmux.wait(timeout: 5) { _ in let once = viewer.tmux.screen; usleep(150_000); return once == viewer.tmux.screen && viewer.shown(once) != nil }
        return try #require(viewer.shown(screen), "\(screen.joined(separator: "\n"))")
    }

    @Test func aSecondPresenterFollowsTheDriverAndTakesOverFromWhereTheRoomIs() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("guide-\(UUID().uuidString.prefix(6)).md")
        try FollowAcrossWidthsTests.document.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "handover-\(UUID().uuidString.prefix(6))"
        let room = "\(server.url)/rooms/\(name)"
        let binary = ServerProcess.binary.path
        let ann = Viewer(try Tmux([binary, "present", room, file.path, "--key", "k", "--name", "Ann"], width: 120, height: 30), width: 120, height: 30)
        ann.tmux.wait { $0.statusLine.contains("PRESENTING") && $0.statusLine.contains("● live") }
        let follower = try RoomConnection(port: server.port, path: "/rooms/\(name)")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        for _ in 0..<6 { try ann.tmux.keys("n") }
        let annPlace = try settled(ann)
        #expect(annPlace.top > 0, "Ann moved down the document")
        #expect(follower.wait { text in text.contains(#""type":"state""#) && text.contains(#""id":"\#(annPlace.blocks[0])""#) })

        // Bob joins with the key at another width: he follows Ann, and says so.
        let bob = Viewer(try Tmux([binary, "present", room, file.path, "--key", "k", "--name", "Bob"], width: 80, height: 24), width: 80, height: 24)
        let bobScreen = bob.tmux.wait { $0.statusLine.contains("FOLLOWING the driver") && bob.shown($0)?.blocks.contains(annPlace.blocks[0]) == true }
        #expect(bob.shown(bobScreen)?.blocks.contains(annPlace.blocks[0]) == true, "Bob shows Ann's block\n\(bobScreen.joined(separator: "\n"))")
        #expect(bobScreen.statusLine.contains("driver Ann"), "\(bobScreen.statusLine)")
        let before = states(follower).count

        // Bob takes control: the room stays where it is.
        try bob.tmux.keys("t")
        bob.tmux.wait { $0.statusLine.contains("PRESENTING") }
        #expect(follower.wait { $0.contains(#""type":"driver""#) && $0.contains(#""name":"Bob""#) })
        try bob.tmux.keys("j")
        #expect(follower.wait { _ in self.states(follower).count > before })
        let taken = states(follower)[before...]
        #expect(taken.allSatisfy { $0["atTop"]?.bool == false }, "no state pulled the room to the top: \(Array(taken))")
        let bobPlace = try settled(bob)
        #expect(taken.last?["anchor"]?["id"]?.string == bobPlace.blocks[0], "the room is at Bob's place")
        #expect(annPlace.blocks.contains(bobPlace.blocks[0]) || bobPlace.blocks.contains(annPlace.blocks[0]),
                "Bob took over next to where Ann was: \(annPlace.blocks[0]) / \(bobPlace.blocks[0])")
    }

    @Test func aPresenterWhoRestartsStartsAtTheRoomsPlaceAndSendsNothingUntilItMoves() throws {
        let server = try InProcessNode()  // the terminal is the process here; the server needs none
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("guide-\(UUID().uuidString.prefix(6)).md")
        try FollowAcrossWidthsTests.document.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let name = "restart-\(UUID().uuidString.prefix(6))"
        let room = "\(server.url)/rooms/\(name)"
        let command = [ServerProcess.binary.path, "present", room, file.path, "--key", "k", "--name", "Ann"]
        let first = Viewer(try Tmux(command, width: 100, height: 26), width: 100, height: 26)
        first.tmux.wait { $0.statusLine.contains("PRESENTING") && $0.statusLine.contains("● live") }
        let follower = try RoomConnection(port: server.port, path: "/rooms/\(name)")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        // One move at a time, each seen by the follower: on a busy machine the screen can hold
        // still between two keys long enough to look settled.
        for _ in 0..<5 {
            let count = states(follower).count
            try first.tmux.keys("n")
            #expect(follower.wait { _ in self.states(follower).count > count }, "a move per key")
        }
        let place = try settled(first)
        #expect(follower.wait { $0.contains(#""id":"\#(place.blocks[0])""#) })
        try first.tmux.keys("q")
        #expect(follower.wait { $0.contains(#""type":"driver","driver":null"#) }, "Ann left")
        let before = states(follower).count

        let again = Viewer(try Tmux(command, width: 100, height: 26), width: 100, height: 26)
        let screen = again.tmux.wait { $0.statusLine.contains("PRESENTING") && again.shown($0)?.top == place.top }
        #expect(again.shown(screen)?.top == place.top, "the restarted presenter starts at the room's place\n\(screen.joined(separator: "\n"))")
        #expect(follower.wait { $0.contains(#""type":"driver""#) && $0.contains(#""name":"Ann""#) })
        try again.tmux.keys("j")
        #expect(follower.wait { _ in self.states(follower).count > before })
        let after = states(follower)[before...]
        #expect(after.allSatisfy { ($0["offset"]?.double ?? 0) >= Double(place.top) }, "nothing pulled the room back: \(Array(after))")
        #expect(after.first?["offset"]?.double == Double(place.top + 1), "the first state after the restart is the presenter's move")
    }
}
