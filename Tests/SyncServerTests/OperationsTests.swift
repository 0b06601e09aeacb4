import Foundation
import Operations
import ScrollModel
@testable import scrollsync
import SyncServer
import Testing

/// A room connection over a raw socket: the answer's status line, then server messages.
final class RoomConnection {
    let client: RawClient
    let head: String
    private var pending = [UInt8]()
    private(set) var received = [String]()
    private(set) var closed = false

    init(port: Int, path: String, headers: [String] = [], from source: String? = nil) throws {
        client = try RawClient(port: port, from: source)
        client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + headers.map { $0 + "\r\n" }.joined() + "\r\n")
        var bytes = [UInt8]()
        let deadline = Date().addingTimeInterval(5)
        var end: Int?
        while end == nil && Date() < deadline {
            bytes += client.receive(atLeast: 1, timeout: 0.5)
            end = bytes.indices.dropLast(3).first { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 }
        }
        let split = (end ?? bytes.count - 4) + 4
        head = String(decoding: bytes[..<min(split, bytes.count)], as: UTF8.self)
        pending = split < bytes.count ? Array(bytes[split...]) : []
        if !head.hasPrefix("HTTP/1.1 101 ") {
            // A refusal: its body says why.
            pending += client.receiveUntilClosed(timeout: 2).bytes
            body = String(decoding: pending, as: UTF8.self)
            pending = []
            client.shutdownBothWays()  // as a client does after a refusal
        }
    }

    /// The body of a refusal (empty after an upgrade).
    private(set) var body = ""

    /// Head and body of the answer.
    var answer: String { head + body }

    var status: String { head.split(separator: "\r\n").first.map(String.init) ?? "" }

    func send(_ json: String) { client.send(maskedFrame(0x1, Array(json.utf8))) }

    /// Reads until a message satisfies `condition` (true) or `timeout` passes (false).
    @discardableResult
    func wait(timeout: TimeInterval = 5, for condition: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var scanned = 0
        while true {
            parse()
            if received[scanned...].contains(where: condition) { return true }
            scanned = received.count
            guard Date() < deadline, !closed else { return false }
            let bytes = client.receive(atLeast: 1, timeout: 0.2)
            pending += bytes
        }
    }

    /// Unmasked server frames: texts are kept; a close frame ends the stream.
    private func parse() {
        while pending.count >= 2 {
            var length = Int(pending[1] & 0x7F)
            var header = 2
            if length == 126 {
                guard pending.count >= 4 else { return }
                length = Int(pending[2]) << 8 | Int(pending[3])
                header = 4
            } else if length == 127 {
                guard pending.count >= 10 else { return }
                length = pending[2..<10].reduce(0) { $0 << 8 | Int($1) }
                header = 10
            }
            guard pending.count >= header + length else { return }
            let opcode = pending[0] & 0x0F
            let payload = Array(pending[header..<(header + length)])
            if opcode == 0x1 { received.append(String(decoding: payload, as: UTF8.self)) }
            if opcode == 0x8 { closed = true; received.append("close \(payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005)") }
            pending.removeFirst(header + length)
        }
    }
}

/// GET `path` and the whole answer.
func httpGet(_ path: String, port: Int, headers: [String] = []) throws -> String {
    let client = try RawClient(port: port)
    client.send("GET \(path) HTTP/1.1\r\nHost: x\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n")
    return String(decoding: client.receiveUntilClosed(timeout: 5).bytes, as: UTF8.self)
}

@Suite("Configuration")
struct ConfigurationTests {
    func temporaryFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static let repository = peersDirectory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test(arguments: [
        (#"{"limits":{"connections":"many"}}"#, "limits.connections: expected a whole number"),
        (#"{"limits":{"conections":5}}"#, "unknown key limits.conections (did you mean limits.connections?)"),
        (#"{"listen":{"port":70000}}"#, "listen.port: expected a whole number from 0 to 65535, got 70000"),
        (#"{"log":{"level":"loud"}}"#, "log.level: expected one of trace, debug"),
        (#"{"origins":"https://a.example"}"#, "origins: expected a list of strings"),
        (#"{"tls":{"certificate":"/x.pem"}}"#, "tls.certificate and tls.key go together"),
        (#"{"limits":"#, "not JSON"),
        (#"{"redis":{"url":"http://10.0.0.5:6379"}}"#, "redis.url: a Redis URL starts with redis://"),
        (#"{"redis":"redis://x"}"#, "redis: expected an object with keys redis.url, redis.shards, redis.password"),
        (#"{"redis":{"cluster":true}}"#, "redis.cluster needs redis.url: a node of the cluster"),
        (#"{"redis":{"url":"redis://10.0.0.5:7000/2","cluster":true}}"#, "redis.cluster: a Redis Cluster has database 0 only"),
    ])
    func badFilesStopStartUpNamingTheKey(_ text: String, _ message: String) throws {
        let file = try temporaryFile(text)
        let error = try #require(throws: ConfigurationError.self) { try loadConfiguration(file: file, flags: [], environment: [:]) }
        #expect(error.message.contains(message), "\(error)")
        if !message.contains("go together") && !message.contains("redis.url:") && !message.contains("redis.cluster") { #expect(error.message.contains(file), "the file is named: \(error)") }
    }

    /// Issue 27.9: what the configuration names outside itself is checked before serving
    /// (`serve` and `config check` read it alike: `loadConfiguration`; their status 78 is
    /// `TerminalClientTests.usageErrorsNameTheCommand`'s).
    @Test func filesTheConfigurationNamesAreChecked() throws {
        let notADirectory = try temporaryFile("{}")
        let cases = [
            (#"{"tls":{"certificate":"\#(testCertificate.cert)","key":"\#(testCertificate.cert)"}}"#, "do not load"),
            (#"{"tls":{"certificate":"\#(testCertificate.cert)","key":"/nonexistent/key.pem"}}"#, "tls.key: cannot read /nonexistent/key.pem"),
            (#"{"store":{"directory":"\#(notADirectory)"}}"#, "store.directory: \(notADirectory) is not a directory"),
            (#"{"redis":{"url":"redis://127.0.0.1:1","caFile":"/nonexistent/ca.pem"}}"#, "redis.caFile: cannot read /nonexistent/ca.pem"),
        ]
        for (text, message) in cases {
            let file = try temporaryFile(text)
            let error = try #require(throws: ConfigurationError.self) { try loadConfiguration(file: file, flags: [], environment: [:]) }
            #expect(error.message.contains(message), "\(text): \(error)")
        }
    }

    @Test func flagsBeatEnvironmentBeatFileBeatDefaults() throws {
        let file = try temporaryFile(#"{"listen":{"port":1111},"limits":{"rooms":5,"connections":7},"admin":{"token":"file-secret"}}"#)
        let environment = ["SCROLLSYNC_LIMITS_ROOMS": "6", "SCROLLSYNC_LIMITS_CONNECTIONS": "8", "SCROLLSYNC_ADMIN_TOKEN": "env-secret"]
        let checked = Settings.describe(try loadConfiguration(file: file, flags: [], environment: environment))
        let effective = try JSON.parse(checked)
        #expect(effective["listen"]?["port"]?.double == 1111, "file over default")
        #expect(effective["limits"]?["rooms"]?.double == 6, "environment over file")
        #expect(effective["limits"]?["membersPerRoom"]?.double == 16384, "default where nothing is said")
        #expect(effective["admin"]?["token"]?.string == "********", "secrets are masked")
        #expect(!checked.contains("env-secret") && !checked.contains("file-secret"), "no secret is printed")

        // A flag over the environment: `serve --max-rooms 1` refuses its second room.
        let serve = try Serve.parse(["--config", file, "--port", "0", "--max-rooms", "1", "--in-memory"])
        let configuration = try loadConfiguration(file: serve.config, flags: serve.overrides, environment: environment)
        #expect(configuration.limits.rooms == 1 && configuration.port == 0 && configuration.dataDirectory == nil)
        let node = try InProcessNode { $0 = configuration }
        let first = try RoomConnection(port: node.port, path: "/rooms/one")
        #expect(first.status.contains(" 101 "))
        let second = try RoomConnection(port: node.port, path: "/rooms/two")
        #expect(second.status.hasPrefix("HTTP/1.1 503 "), "\(second.head)")
    }

    @Test func environmentTyposAreErrors() throws {
        let typo = try #require(throws: ConfigurationError.self) { try loadConfiguration(file: nil, flags: [], environment: ["SCROLLSYNC_LIMITS_ROOM": "3"]) }
        #expect(typo.message.contains("SCROLLSYNC_LIMITS_ROOM names no configuration key"), "\(typo)")
        let typed = try #require(throws: ConfigurationError.self) { try loadConfiguration(file: nil, flags: [], environment: ["SCROLLSYNC_LISTEN_PORT": "eighty"]) }
        #expect(typed.message.contains("SCROLLSYNC_LISTEN_PORT (listen.port)"), "\(typed)")
    }

    /// Under systemd (`StateDirectory=`), `$STATE_DIRECTORY` is the data directory, unless
    /// the configuration names one.
    @Test func stateDirectoryIsTheDataDirectoryUnlessOneIsSet() throws {
        let state = try loadConfiguration(file: nil, flags: [], environment: ["STATE_DIRECTORY": "/var/lib/scrollsync:/var/lib/other"])
        #expect(state.dataDirectory == "/var/lib/scrollsync")
        #expect(Settings.describe(state).contains(#""directory": "/var/lib/scrollsync""#))
        let set = try loadConfiguration(file: nil, flags: [], environment: ["STATE_DIRECTORY": "/var/lib/scrollsync", "SCROLLSYNC_STORE_DIRECTORY": "/srv/rooms"])
        #expect(set.dataDirectory == "/srv/rooms", "an explicit setting wins")
    }

    @Test func configCheckMasksARedisPassword() throws {
        let described = Settings.describe(try loadConfiguration(file: nil, flags: [], environment: ["SCROLLSYNC_REDIS_URL": "redis://ops:hunter2@10.0.0.5:6379/0"]))
        #expect(!described.contains("hunter2"))
        #expect(described.contains("redis://ops:********@10.0.0.5:6379/0"), "\(described)")
    }

    @Test func shippedFilesAreValidAndTheDefaultsFileIsTheDefaults() throws {
        let defaults = try String(contentsOf: Self.repository.appendingPathComponent("Config/scrollsync.json"), encoding: .utf8)
        #expect(defaults.trimmingCharacters(in: .whitespacesAndNewlines) == Settings.describe(ServerConfiguration()),
                "Config/scrollsync.json differs from the built-in defaults: regenerate it with `scrollsync config defaults > Config/scrollsync.json`")
        for example in ["Config/scrollsync.json", "Config/examples/tls.json", "Config/examples/public.json", "Config/examples/cluster.json", "Config/examples/redis-cluster.json"] {
            // The public example needs an admin token of the operator's own; the TLS example's
            // files are where a Debian machine keeps them, here the tests' own.
            let environment = ["SCROLLSYNC_ADMIN_TOKEN": "an-operators-own-token-0123456789",
                               "SCROLLSYNC_TLS_CERTIFICATE": testCertificate.cert, "SCROLLSYNC_TLS_KEY": testCertificate.key,
                               "SCROLLSYNC_STORE_DIRECTORY": FileManager.default.temporaryDirectory.path]
            #expect(throws: Never.self, "\(example)") {
                try loadConfiguration(file: Self.repository.appendingPathComponent(example).path, flags: [], environment: environment)
            }
        }
        // As shipped, the TLS example names files this machine does not have: it says which.
        let tls = Self.repository.appendingPathComponent("Config/examples/tls.json").path
        let missing = try #require(throws: ConfigurationError.self) { try loadConfiguration(file: tls, flags: [], environment: [:]) }
        #expect(missing.message.contains("tls.certificate: cannot read /etc/scrollsync/fullchain.pem"), "\(missing)")
        let placeholder = try #require(throws: ConfigurationError.self) {
            try loadConfiguration(file: Self.repository.appendingPathComponent("Config/examples/public.json").path, flags: [], environment: [:])
        }
        #expect(placeholder.message.contains("admin.token: replace the example's placeholder"), "\(placeholder)")
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("Config/README.md"), encoding: .utf8)
        for setting in Settings.all {
            #expect(readme.contains("`\(setting.key)`"), "Config/README.md documents \(setting.key)")
            #expect(readme.contains("`\(setting.environmentName)`"), "Config/README.md names \(setting.environmentName)")
        }
    }
}

@Suite("Limits")
struct LimitTests {
}

/// A sample's value in the server's /metrics (the line `name value`, labels included in `name`).
func metricValue(_ name: String, port: Int) throws -> Double {
    let text = try httpGet("/metrics", port: port)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }), let value = Double(line.split(separator: " ").last!) else {
        throw Failure("no \(name) in /metrics")
    }
    return value
}

@Suite("Operations endpoints")
struct OperationsEndpointTests {
    /// The Prometheus text format: HELP and TYPE before samples, `name{labels} value` lines.
    func parsePrometheus(_ body: String) throws -> [String: Double] {
        var samples = [String: Double]()
        var types = [String: String]()
        for line in body.split(separator: "\n") {
            if line.hasPrefix("# HELP ") { continue }
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else { throw Failure("bad TYPE: \(line)") }
                types[String(parts[2])] = String(parts[3])
                continue
            }
            guard let match = line.wholeMatch(of: /([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? (\S+)/),
                  let value = Double(match.4) ?? (match.4 == "+Inf" ? .infinity : nil) else {
                throw Failure("not a sample line: \(line)")
            }
            let family = String(match.1).replacing(/_(bucket|sum|count)$/, with: "")
            guard types[String(match.1)] != nil || types[family] == "histogram" else { throw Failure("sample before its TYPE: \(line)") }
            samples[String(match.1) + String(match.2 ?? "")] = value
        }
        return samples
    }

}

@Suite("Restart without loss", .serialized)
struct PersistenceTests {
    @Test func killDashNineKeepsStateDocumentAndKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("scrollsync-store-\(UUID().uuidString)").path
        let first = try ServerProcess(["--data-dir", directory])
        let presenter = try RoomConnection(port: first.port, path: "/rooms/kept?role=presenter&key=s3cret")
        #expect(presenter.wait { $0.contains("\"type\":\"welcome\"") })
        presenter.send(##"{"type":"document","name":"talk.md","format":"markdown","text":"# Talk\n\nHello"}"##)
        presenter.send(#"{"type":"scroll","offset":12,"viewport":10,"content":100,"anchor":{"id":"talk","fraction":0.5}}"#)
        #expect(presenter.wait { $0.contains("\"offset\":12,") })
        // The store writes within 50 ms; wait until the files say so, then kill without warning.
        let stateFile = directory + "/kept.state"
        for _ in 0..<100 where !(String(decoding: (FileManager.default.contents(atPath: stateFile) ?? Data()), as: UTF8.self).contains("\"offset\":12,")) { usleep(20_000) }
        kill(first.pid, SIGKILL)
        #expect(first.child.wait(timeout: 10) == 128 + SIGKILL)
        #expect(!((try? String(contentsOfFile: directory + "/kept.key", encoding: .utf8)) ?? "s3cret").contains("s3cret"), "the key is stored as a digest")

        let second = try ServerProcess(["--data-dir", directory])
        let late = try RoomConnection(port: second.port, path: "/rooms/kept")
        #expect(late.wait { $0.contains("\"type\":\"document\"") }, "\(late.received)")
        let welcome = late.received.first { $0.contains("\"type\":\"welcome\"") } ?? ""
        #expect(welcome.contains("\"offset\":12,") && welcome.contains("\"id\":\"talk\""), "\(welcome)")
        // seq continues above the ceiling the store reserved before the crash, never back.
        let restoredSeq = seqValue(welcome) ?? 0
        #expect(restoredSeq > 1, "\(welcome)")
        #expect(late.received.contains { $0.contains("\"text\":\"# Talk\\n\\nHello\"") }, "\(late.received)")

        // The key survived too: a wrong key is refused, the right one drives and seq goes on.
        let intruder = try RoomConnection(port: second.port, path: "/rooms/kept?role=presenter&key=guess")
        #expect(intruder.wait { $0.contains("\"code\":\"unauthorized\"") }, "\(intruder.received)")
        let returning = try RoomConnection(port: second.port, path: "/rooms/kept?role=presenter&key=s3cret")
        #expect(returning.wait { $0.contains("\"type\":\"welcome\"") })
        returning.send(#"{"type":"scroll","offset":20}"#)
        #expect(late.wait { $0.contains("\"offset\":20,") && seqValue($0) == restoredSeq + 1 }, "\(late.received.suffix(2))")
        try? FileManager.default.removeItem(atPath: directory)
    }

}

/// The `seq` of a `state` message or of a `welcome`'s state.
func seqValue(_ message: String) -> Int? {
    guard let match = message.firstMatch(of: /"seq":(\d+)/) else { return nil }
    return Int(match.1)
}
