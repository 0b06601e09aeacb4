import Foundation
import Testing

/// Issue 47.3: `drive` shows a refusal at once with the server's reason (it waited 10 s and
/// said "no answer").
@Suite("drive names a refusal")
struct DriveRefusalTests {
    static let binary = ServerProcess.binary.path

    @Test func aWrongKeyIsNamedAtOnce() throws {
        let server = try ServerProcess()
        let owner = try run(Self.binary, ["drive", server.url + "/rooms/keyed", "--key", "right", "--script", "/dev/null"], timeout: 30)
        #expect(owner.status == 0, "\(owner.output)")
        let wrong = try run(Self.binary, ["drive", server.url + "/rooms/keyed", "--key", "wrong", "--script", "/dev/null"], timeout: 30)
        #expect(wrong.status != 0)
        #expect(wrong.output.contains("refused") && wrong.output.contains("key"), "\(wrong.output)")
        #expect(!wrong.output.contains("no answer"), "the refusal ends the wait, with its reason: \(wrong.output)")
    }
}
