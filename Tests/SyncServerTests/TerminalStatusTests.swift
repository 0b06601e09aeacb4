import Foundation
@testable import scrollsync
#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Testing

/// Issue 47 under a real terminal (tmux): what a presenter or follower sees when something
/// is wrong, and narrow terminals.
@Suite("Terminal status under tmux", .serialized)
struct TerminalStatusTests {
    /// A port nothing listens on while the returned socket stays open: bound, never
    /// listening, so connecting to it is refused and nobody else takes it.
    static func refusingPort() throws -> (socket: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound else { throw Failure("cannot bind a local port") }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Issue 47.1: a follower of a server that is down sees that it is offline at 40 and at
    /// 120 columns, first on the status line, with the countdown; the reason is on screen.
    @Test(arguments: [40, 120])
    func aFollowerOfAServerThatIsDownSeesOffline(width: Int) throws {
        let (fd, port) = try Self.refusingPort()
        defer { close(fd) }
        let follower = try Tmux([ServerProcess.binary.path, "follow", "ws://127.0.0.1:\(port)/rooms/down"], width: width, height: 16)
        let shown = follower.wait { $0.statusLine.hasPrefix(" ○ offline") }
        #expect(shown.statusLine.hasPrefix(" ○ offline"), "\(width): \(shown.joined(separator: "\n"))")
        #expect(shown.statusLine.contains(" s"), "the countdown: \(shown.statusLine)")
        #expect(shown.joined(separator: " ").contains("Connection refused"), "the reason is on screen: \(shown.joined(separator: "\n"))")
        try follower.keys("q")
    }

    /// Issue 47.1: a presenter with a wrong key at 20 and 80 columns is told so first
    /// (`✕ wrong key`; at 20 the server's `⚠ unauthorized` took its place), not offered `t`,
    /// told the reason once, and shown no driver or followers of a room it never joined (it
    /// said `nobody driving` while the owner drove).
    @Test(arguments: [20, 80])
    func aPresenterWithAWrongKeyIsToldSo(width: Int) throws {
        let server = try InProcessNode()
        let room = "keyed-\(UUID().uuidString.prefix(6))"
        let owner = try RoomConnection(port: server.port, path: "/rooms/\(room)?role=presenter&key=right")
        #expect(owner.wait { $0.contains("\"type\":\"welcome\"") })
        let presenter = try Tmux([ServerProcess.binary.path, "present", "\(server.url)/rooms/\(room)", TerminalClientTests.document, "--key", "wrong"],
                                 width: width, height: 20)
        let shown = presenter.wait { $0.statusLine.contains("✕") }
        #expect(shown.statusLine.hasPrefix(" ✕ wrong key"), "\(shown.joined(separator: "\n"))")
        #expect(!shown.joined().contains("take control"), "\(shown.statusLine)")
        let words = shown.joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(words.components(separatedBy: "wrong or missing presenter key").count == 2, "the reason once: \(shown.joined(separator: "\n"))")
        #expect(!shown.statusLine.contains("driving") && !shown.statusLine.contains("follower"), "\(shown.statusLine)")
        try presenter.keys("q")
    }

    /// Issue 47.7 and 47.12: `present --help` names `f` and the help key.
    @Test func presentHelpNamesEveryKey() {
        for command in [Present.self, Follow.self] as [any ParsableCommand.Type] {
            // Words as the reader reads them, wherever the help wraps its lines.
            let help = command.helpMessage(columns: 200).split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(help.contains("f (follow") || help.contains("f follows"), "\(help)")
            #expect(help.contains("h or F1"), "\(help)")
        }
    }

    /// Issue 47.11 in real terminals: the presenter (120 columns) searches and the room
    /// moves with it; a follower (40 columns) searches, jumps to its own match and detaches.
    @Test func searchJumpsInPresentAndFollow() throws {
        let server = try InProcessNode()
        let room = "\(server.url)/rooms/search-\(UUID().uuidString.prefix(6))"
        let presenter = try Tmux([ServerProcess.binary.path, "present", room, TerminalClientTests.document, "--name", "Ann"], width: 120, height: 24)
        let follower = try Tmux([ServerProcess.binary.path, "follow", room], width: 40, height: 16)
        presenter.wait { $0.statusLine.contains("PRESENTING") && $0.statusLine.contains("1 follower") }
        follower.wait { $0.statusLine.contains("FOLLOWING") && $0.header.contains("ScrollSync Tour") }

        try presenter.keys("/", "OpenSSL")
        #expect(presenter.wait { $0.statusLine.hasPrefix(" /OpenSSL") }.statusLine.hasPrefix(" /OpenSSL"), "the prompt replaces the status line")
        try presenter.keys("Enter")
        let jumped = presenter.wait { $0.text.dropFirst().first?.contains("OpenSSL") == true && $0.statusLine.contains("/OpenSSL 1/") }
        #expect(jumped.text.dropFirst().first?.contains("OpenSSL") == true, "the match's row is at the top: \(jumped.joined(separator: "\n"))")
        #expect(jumped.statusLine.contains("PRESENTING") && jumped.statusLine.contains("/OpenSSL 1/"), "\(jumped.statusLine)")
        #expect(jumped.section == "Install", "OpenSSL is first named under Install: \(jumped.header)")
        let moved = follower.wait { $0.section == jumped.section }
        #expect(moved.section == jumped.section, "the room moved with the presenter: \(moved.header)")

        try follower.keys("/", "backoff", "Enter")
        let found = follower.wait { $0.text.dropFirst().first?.contains("backoff") == true && $0.statusLine.contains("DETACHED") }
        #expect(found.text.dropFirst().first?.contains("backoff") == true, "\(found.joined(separator: "\n"))")
        #expect(found.statusLine.contains("DETACHED") && found.statusLine.contains("1/"), "\(found.statusLine)")
        #expect(presenter.wait { $0.statusLine.contains("(1 detached)") }.statusLine.contains("(1 detached)"))
        try follower.keys("/", "Enter")
        #expect(follower.wait { $0.statusLine.contains("2/") }.statusLine.contains("2/"), "an empty pattern repeats the search")
        try presenter.keys("q")
        try follower.keys("q")
    }
}
