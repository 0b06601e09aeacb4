import Foundation
import SyncServer
import Testing
import Transport

/// The browser viewer's script as files (issue 28.4): valid JavaScript, and its PROTOCOL.md §3
/// mapping, exactly as the server serves it, run under node over the follow vectors: the
/// hand-derived ones and the layout ones.
@Suite("Viewer script")
struct ViewerScriptTests {
    static let viewerDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/SyncServer/Viewer")
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/vectors")

    @Test(arguments: ["viewer.js", "viewer-follow.js", "viewer-player.js"])
    func isValidJavaScript(_ file: String) throws {
        let result = try run("node", ["--check", Self.viewerDirectory.appendingPathComponent(file).path])
        #expect(result.status == 0, "\(file): \(result.output)")
    }

    /// The player's pure parts (issue 48.2): its clock and what a room showed at a time.
    @Test func thePlayersPureParts() throws {
        let result = try run("node", [peersDirectory.appendingPathComponent("viewer_player_checks.mjs").path,
                                      Self.viewerDirectory.appendingPathComponent("viewer-player.js").path])
        #expect(result.status == 0 && result.output.contains("checks: ok"), "\(result.output)")
    }

    @Test func theServedMappingFollowsTheVectors() throws {
        let (server, loop) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        let response = ask("GET /viewer-follow.js HTTP/1.1\r\nHost: test\r\n\r\n", of: server, on: loop)
        #expect(response.hasPrefix("HTTP/1.1 200 ") && response.contains("Content-Type: text/javascript"), "\(response.prefix(300))")
        let body = try #require(response.range(of: "\r\n\r\n").map { String(response[$0.upperBound...]) })
        #expect(body.contains("export function topFor"))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("viewer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let module = directory.appendingPathComponent("viewer-follow.mjs")
        try Data(body.utf8).write(to: module)
        let result = try run("node", [peersDirectory.appendingPathComponent("viewer_follow_vectors.mjs").path, module.path,
                                      Self.vectors.appendingPathComponent("follow-mapping.json").path,
                                      Self.vectors.appendingPathComponent("follow-rows.json").path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("follow-mapping.json: 15 cases") && result.output.contains("follow-rows.json: 27 cases"), "\(result.output)")
    }
}
