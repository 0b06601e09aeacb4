import Foundation
import Testing

/// Issue 47.2: a `record` that never joins the room (a private room without its key, a server
/// that is down) exits non-zero with the reason and leaves an existing file as it was; one
/// that joins replaces it.
@Suite("record keeps what it cannot replace")
struct RecordKeepsFilesTests {
    static let binary = ServerProcess.binary.path
    static let kept = "{\"format\":\"scrollsync-recording\",\"a talk\":\"kept\"}\n"

    func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    func leftovers(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".partial-") }
    }

    @Test func aRefusedRecordingLeavesTheFileAsItWas() throws {
        let server = try ServerProcess()
        let directory = try directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("keep.rec").path
        try Self.kept.write(toFile: file, atomically: true, encoding: .utf8)
        let shared = try run(Self.binary, ["drive", server.url + "/rooms/private", "--key", "k", "--follow-key", "the-follow-key",
                                           "--script", "/dev/null"])
        #expect(shared.status == 0, "\(shared.output)")
        let refused = try run(Self.binary, ["record", server.url + "/rooms/private", "-o", file, "--duration", "20"], timeout: 60)
        #expect(refused.status != 0, "\(refused.output)")
        #expect(refused.output.contains("never joined") && refused.output.contains("unchanged"), "\(refused.output)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == Self.kept)
        #expect(try leftovers(directory).isEmpty)

        // With the key it joins, and the new recording replaces the file.
        let recorded = try run(Self.binary, ["record", server.url + "/rooms/private", "--follow-key", "the-follow-key", "-o", file,
                                             "--duration", "1"], timeout: 60)
        #expect(recorded.status == 0, "\(recorded.output)")
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains(#""room":"private""#))
        #expect(try leftovers(directory).isEmpty)
    }

    @Test func aServerThatIsDownLeavesTheFileAsItWas() throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("keep.rec").path
        try Self.kept.write(toFile: file, atomically: true, encoding: .utf8)
        let port = try freePort()  // nothing listens there
        let result = try run(Self.binary, ["record", "ws://127.0.0.1:\(port)/rooms/talk", "-o", file, "--duration", "1"], timeout: 60)
        #expect(result.status != 0, "\(result.output)")
        #expect(result.output.contains("never joined"), "\(result.output)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == Self.kept)
        #expect(try leftovers(directory).isEmpty)
    }
}
