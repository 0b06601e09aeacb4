import Foundation
import Testing

/// What a hostile client must not be able to do to the server, its log or other users
/// (issue 17's reproductions, each as a class of attack).
@Suite("Hostile clients")
struct HostileClientTests {
    /// A `%` that is not followed by two hex digits, or bytes that are not UTF-8, are a
    /// 400: never repaired into another value (`a%zzb` is not the key `ab`).
    @Test(arguments: ["key=a%zzb", "role=presenter&key=%ff%ff", "name=%", "name=ok&key=%4", "ro%zzle=presenter"])
    func malformedPercentEncodingIsRefused(_ query: String) throws {
        let server = try ServerProcess()
        let client = try RawClient(port: server.port)
        let head = client.upgrade(path: "/rooms/enc?\(query)")
        #expect(head.hasPrefix("HTTP/1.1 400 "), "\(head)")
        let (bytes, _) = client.receiveUntilClosed(timeout: 5)
        #expect((head + String(decoding: bytes, as: UTF8.self)).contains("percent-encoding"), "the body says what was wrong")
    }

    /// Values that quote the request (`role=…`) cannot forge a log line or carry an escape
    /// sequence into the log or the 400's body.
    @Test func requestTextCannotForgeLogLinesOrEscapeSequences() throws {
        let server = try ServerProcess()
        let forged = "%0a2026-11-25T00:00:00.000Z%20critical%20forged%20line%1b]0;title%07%1b[2J%c2%9b"
        let client = try RawClient(port: server.port)
        let head = client.upgrade(path: "/rooms/logs?role=\(forged)")
        let (rest, _) = client.receiveUntilClosed(timeout: 5)
        let answer = head + String(decoding: rest, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 400 "))
        let body = answer.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        #expect(body.contains("\u{240A}2026"), "the newline is shown as a picture: \(body.debugDescription)")
        #expect(!body.unicodeScalars.dropLast().contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }, "\(body.debugDescription)")
        #expect(server.child.waitForOutput(timeout: 10) { $0.contains { $0.contains("status=400") } })
        let lines = server.child.lines
        #expect(!lines.contains { $0.contains("critical forged") && !$0.contains("refused") }, "a forged line: \(lines)")
        #expect(!server.child.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
    }
}
