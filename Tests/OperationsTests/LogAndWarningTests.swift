import Foundation
import Logging
import Operations
import ScrollModel
import Testing

/// Operations' own parts, without a server: the log's lines (network text made safe, one event
/// one line) and the warnings a configuration gives. The setting table against `serve`'s flags,
/// the shipped files and a running server: `SettingsTableTests` and `ConfigurationTests`.
@Suite("Log lines and configuration warnings")
struct LogAndWarningTests {
    /// Logs through a `LineLogHandler` on a pipe and returns what reached it.
    static func logged(json: Bool, _ body: (Logger) -> Void) throws -> String {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let output = LogOutput(fd: ends[1])
        var logger = Logger(label: "test") { _ in LineLogHandler(output: output, level: .info, json: json) }
        logger.logLevel = .info
        body(logger)
        output.flush()
        var bytes = [UInt8](repeating: 0, count: 1 << 16)
        let count = read(ends[0], &bytes, bytes.count)
        close(ends[1])
        return String(decoding: bytes.prefix(max(count, 0)), as: UTF8.self)
    }

    /// A client's text in a message or a value cannot forge a line or send an escape sequence
    /// to whoever reads the log; a value with a space or a quote stays one token.
    @Test func networkTextStaysOnItsLineWithoutEscapes() throws {
        let text = try Self.logged(json: false) { logger in
            logger.info("refused \u{1B}[2Jroom\nforged line", metadata: ["name": "Ann \"x\"\r\nlevel=error", "room": "demo"])
            logger.debug("below the level")
        }
        #expect(text.hasSuffix("\n") && text.filter { $0 == "\n" }.count == 1, "one event, one line: \(text.debugDescription)")
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" } && !text.contains("\u{7F}"), "no control reaches the log: \(text.debugDescription)")
        #expect(text.contains(" info refused "), "\(text)")
        #expect(text.contains(#"name="Ann \"x\""#), "a value with spaces and quotes is quoted, its quotes escaped: \(text)")
        #expect(text.contains(" room=demo"), "a plain value is bare: \(text)")
        #expect(!text.contains("below the level"))
    }

    /// `log.json`: one JSON object per line, the same fields, network text as JSON strings.
    @Test func jsonLinesHoldTheSameFields() throws {
        let text = try Self.logged(json: true) { logger in
            logger.warning("room not recorded", metadata: ["room": "a\u{1B}b", "address": "192.0.2.1"])
        }
        let lines = text.split(separator: "\n")
        try #require(lines.count == 1, "\(text.debugDescription)")
        let object = try JSON.parse(String(lines[0]))
        #expect(object["level"]?.string == "warning" && object["message"]?.string == "room not recorded")
        #expect(object["room"]?.string == "a\u{1B}b" && object["address"]?.string == "192.0.2.1")
        #expect(!text.contains("\u{1B}"), "the escape is written as \\u001b")
        #expect(object["time"]?.string?.hasSuffix("Z") == true)
    }

    /// Open admin endpoints are said when the server listens beyond loopback, never on it;
    /// Redis without a secret is said whatever the address.
    @Test(arguments: [("127.0.0.1", false), ("localhost", false), ("::1", false), ("[::1]", false), ("127.1.2.3", false),
                      ("0.0.0.0", true), ("::", true), ("192.0.2.7", true), ("[2001:db8::1]", true)])
    func openAdminEndpointsAreSaidBeyondLoopback(host: String, warned: Bool) {
        var configuration = ServerConfiguration()
        configuration.host = host
        let warnings = ConfigurationWarnings.of(configuration)
        #expect(warnings.contains { $0.contains("admin.token") && $0.contains("SCROLLSYNC_ADMIN_TOKEN") } == warned, "\(host): \(warnings)")
        configuration.adminToken = "an-operators-own-token"
        #expect(ConfigurationWarnings.of(configuration).isEmpty, "\(host): a token closes them")
        configuration.redisURL = "redis://10.0.0.5:6379"
        #expect(ConfigurationWarnings.of(configuration).contains { $0.contains("redis.secret") })
        configuration.redisSecret = String(repeating: "s", count: 32)
        #expect(ConfigurationWarnings.of(configuration).isEmpty)
    }
}
