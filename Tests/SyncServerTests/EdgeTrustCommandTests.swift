import Foundation
import Testing

/// Issue 44 at the command line: a follow key without a presenter key stops every presenting
/// command before it connects, and a server beyond loopback without an admin token says what
/// that leaves open.
@Suite("Trust at the edges, round 3: commands")
struct EdgeTrustCommandTests {
    @Test(arguments: [
        ["present", "ws://127.0.0.1:9/rooms/a", "notes.md", "--follow-key", "FK-1"],
        ["drive", "ws://127.0.0.1:9/rooms/a", "--follow-key", "FK-1"],
        ["replay", "talk.rec", "ws://127.0.0.1:9/rooms/a", "--follow-key", "FK-1", "--key", ""],
    ])
    func aFollowKeyWithoutAPresenterKeyIsAUsageError(_ arguments: [String]) throws {
        let result = try run(ServerProcess.binary.path, arguments, timeout: 20)
        #expect(result.status == 64, "\(arguments): \(result.output)")
        #expect(result.output.contains("scrollsync: error: --follow-key makes the room private and needs --key (the room's presenter key) or --token"),
                "\(arguments): \(result.output)")
    }

    static let warning = "GET /rooms (every public room with its driver's and document's names) and GET /metrics are open to anyone"

    @Test func servingBeyondLoopbackWithoutAnAdminTokenSaysWhatIsOpenOnce() throws {
        let open = try ServerProcess(["--host", "0.0.0.0"])
        #expect(open.child.waitForOutput(timeout: 10) { $0.contains { $0.contains(Self.warning) } }, "\(open.child.output)")
        let lines = open.child.output.split(separator: "\n").filter { $0.contains(Self.warning) }
        #expect(lines.count == 1 && lines[0].contains("warning") && lines[0].contains("port \(open.port) on any address of this machine")
                && lines[0].contains("set admin.token (SCROLLSYNC_ADMIN_TOKEN) to close them"), "\(lines)")
        open.stop()
        for (arguments, environment) in [([String](), [String: String]()), (["--host", "0.0.0.0"], ["SCROLLSYNC_ADMIN_TOKEN": "admin-token-0123456789"])] {
            let closed = try ServerProcess(arguments, environment: environment)
            closed.stop()  // what it said at start is all out once it has said goodbye
            #expect(closed.child.output.contains("shutting down") && !closed.child.output.contains(Self.warning), "\(arguments): \(closed.child.output)")
        }
    }

    @Test func configCheckSaysItToo() throws {
        let open = try run(ServerProcess.binary.path, ["config", "check"], environment: ["SCROLLSYNC_LISTEN_HOST": "203.0.113.7"], timeout: 20)
        #expect(open.status == 0, "\(open.output)")
        #expect(open.output.contains("scrollsync: warning: \(Self.warning) who can reach 203.0.113.7:8080"), "\(open.output)")
        let closed = try run(ServerProcess.binary.path, ["config", "check"], environment: ["SCROLLSYNC_LISTEN_HOST": "127.0.0.1"], timeout: 20)
        #expect(closed.status == 0 && !closed.output.contains("warning"), "\(closed.output)")
    }
}
