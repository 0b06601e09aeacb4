import Access
import Foundation
import Logging
import Operations
import ScrollModel
import Synchronization
@testable import SyncServer
import Testing
import Transport

/// Every line a server logs, kept for the test (what the process would print).
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var text: String { lines.withLock { $0.joined(separator: "\n") } }
    var all: [String] { lines.withLock { $0 } }

    /// A logger whose lines come here: `level message key=value…`.
    var logger: Logger {
        Logger(label: "scrollsync") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var logLevel: Logger.Level = .info
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.lines.withLock { $0.append("\(event.level) \(event.message) \(fields)") }
        }
    }
}

/// The store and presenter keys on the in-process server (issue 28.3: moved from spawned
/// servers): what a restart restores from damaged or hostile files, keys kept as slow hashes,
/// guessing limited, `seq` waiting for its first ceiling. A restart is a second `Server` on
/// the same directory; its log is captured, not read from a process.
@Suite("Store and keys in process (embedded loop)", .serialized)
struct InProcessStoreTests {
    static func server(directory: String?, log: CapturedLog = CapturedLog(), _ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws
        -> (Server, EventLoop) {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = directory
        adjust(&configuration)
        let loop = try EventLoop.embedded()
        return (try Server(configuration: configuration, logger: log.logger, embedded: loop), loop)
    }

    /// Room `kept` with key `s3cret`: a document and a scroll, written by the store; then the server stops.
    static func populate(_ directory: String) throws {
        let (server, loop) = try server(directory: directory)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/kept?role=presenter&key=s3cret")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        presenter.send(##"{"type":"document","name":"talk.md","format":"markdown","text":"# Talk"}"##)
        presenter.send(#"{"type":"scroll","offset":12,"viewport":10,"content":100}"#)
        #expect(presenter.wait { $0.contains(#""offset":12,"#) })
        server.shutdown()  // writes what it holds
        #expect(String(decoding: FileManager.default.contents(atPath: directory + "/kept.state") ?? Data(), as: UTF8.self).contains(#""offset":12,"#))
    }

    static func get(_ path: String, _ server: Server, _ loop: EventLoop) -> String {
        ask("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n", of: server, on: loop)
    }

    /// A damaged or missing key file never leaves a keyed room without its key: it is restored
    /// locked (presenters refused with a reason, followers see its last state), logged, and
    /// /healthz says so.
    @Test(arguments: ["truncate", "empty", "newline", "garbage", "missing"])
    func aDamagedKeyFileRestoresTheRoomLocked(_ damage: String) throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.populate(directory)
        let keyFile = directory + "/kept.key"
        let original = FileManager.default.contents(atPath: keyFile) ?? Data()
        #expect(!original.isEmpty)
        switch damage {
        case "truncate": try original.prefix(original.count - 10).write(to: URL(fileURLWithPath: keyFile))
        case "empty": try Data().write(to: URL(fileURLWithPath: keyFile))
        case "newline": try (original + Data([10])).write(to: URL(fileURLWithPath: keyFile))
        case "garbage": try Data("not a key at all".utf8).write(to: URL(fileURLWithPath: keyFile))
        default: try FileManager.default.removeItem(atPath: keyFile)
        }
        let log = CapturedLog()
        let (server, loop) = try Self.server(directory: directory, log: log)
        defer { server.shutdown() }
        for key in ["s3cret", "anything", ""] {
            let presenter = try InProcessClient(server, loop: loop, path: "/rooms/kept?role=presenter&key=\(key)")
            #expect(presenter.wait { $0.contains(#""code":"unauthorized""#) && $0.contains("locked") }, "\(damage), key \(key): \(presenter.messages)")
        }
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/kept")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) && $0.contains(#""offset":12,"#) }, "\(follower.messages)")
        #expect(log.text.contains("room restored locked"), "logged: \(log.text)")
        if damage != "missing" { #expect(Self.get("/healthz", server, loop).contains("damaged files")) }
    }

    /// A state whose values no client could send (`offset` -1e308) is not restored; the damage
    /// is logged and counted; the room keeps its key.
    @Test func restoredValuesAreValidatedAsIncomingMessagesAre() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.populate(directory)
        // Written the way a store from before checksums wrote it (no header): still checked.
        let bad = #"{"type":"state","seq":9,"offset":-1e308,"direction":"none","atTop":true,"atBottom":false,"by":"0000000000000001"}"#
        try Data(bad.utf8).write(to: URL(fileURLWithPath: directory + "/kept.state"))
        let log = CapturedLog()
        let (server, loop) = try Self.server(directory: directory, log: log)
        defer { server.shutdown() }
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/kept")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        #expect(follower.messages.first { $0.contains("welcome") }?.contains(#""state":null"#) == true, "\(follower.messages)")
        #expect(log.text.contains("stored file damaged"), "\(log.text)")
        #expect(Self.get("/metrics", server, loop).contains("scrollsync_store_damaged_files 1"))
        let intruder = try InProcessClient(server, loop: loop, path: "/rooms/kept?role=presenter&key=guess")
        #expect(intruder.wait { $0.contains(#""code":"unauthorized""#) }, "the key is kept")
    }

    /// Keys are kept as PBKDF2 records with a random salt; an older server's record (one salted
    /// SHA-256) still admits its key and is replaced by a slow hash at that join.
    @Test func keysAreKeptAsSlowSaltedHashes() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let (server, loop) = try Self.server(directory: directory)
            let presenter = try InProcessClient(server, loop: loop, path: "/rooms/slow?role=presenter&key=open-sesame")
            #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
            server.shutdown()
        }
        let stored = String(decoding: FileManager.default.contents(atPath: directory + "/slow.key") ?? Data(), as: UTF8.self)
        #expect(stored.contains("\npbkdf2-sha256$80000$"), "\(stored)")
        #expect(!stored.contains("open-sesame"))
        let legacy = Digest.sha256(Array("scrollsync.v1 presenter key\u{0}old\u{0}opened".utf8))
        try Data(legacy.utf8).write(to: URL(fileURLWithPath: directory + "/old.key"))
        let (server, loop) = try Self.server(directory: directory)
        defer { server.shutdown() }
        let wrong = try InProcessClient(server, loop: loop, path: "/rooms/old?role=presenter&key=closed")
        #expect(wrong.wait { $0.contains(#""code":"unauthorized""#) })
        let right = try InProcessClient(server, loop: loop, path: "/rooms/old?role=presenter&key=opened")
        #expect(right.wait { $0.contains(#""type":"welcome""#) }, "\(right.messages)")
        #expect(loop.advance(until: {
            String(decoding: FileManager.default.contents(atPath: directory + "/old.key") ?? Data(), as: UTF8.self).contains("pbkdf2-sha256$")
        }), "upgraded to a slow hash")
        let again = try InProcessClient(server, loop: loop, path: "/rooms/old?role=presenter&key=opened")
        #expect(again.wait { $0.contains(#""type":"welcome""#) }, "the upgraded record admits the key")
    }

    @Test func inMemoryServersKeepNothing() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        let (server, loop) = try Self.server(directory: nil)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/gone?role=presenter")
        presenter.send(#"{"type":"scroll","offset":1}"#)
        #expect(presenter.wait { $0.contains(#""offset":1,"#) })
        server.shutdown()  // a stopping server writes what it holds, if it writes anything
        #expect(!FileManager.default.fileExists(atPath: directory), "in memory, nothing is written")
    }

    /// Scrolls sent before the store wrote the room's first `seq` ceiling wait for it and the
    /// newest of them goes, in order.
    @Test func scrollsWaitingForTheFirstCeilingEndOnTheNewest() throws {
        let directory = StoreFaultTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (server, loop) = try Self.server(directory: directory)
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/fresh?role=presenter&key=k")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/fresh")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) })
        for burst in 0..<5 {
            presenter.send(all: (1...12).map { #"{"type":"scroll","offset":\#(burst * 100 + $0)}"# })
            loop.advance(by: 20_000_000)
        }
        #expect(follower.wait { $0.contains(#""offset":412,"#) }, "the newest scroll reaches the room: \(follower.messages.suffix(3))")
        let offsets = follower.states.compactMap { $0["offset"]?.double }
        #expect(offsets == offsets.sorted() && offsets.last == 412, "\(offsets)")
    }

    /// Wrong presenter keys are limited per address and room (10 a minute, then 429 with
    /// Retry-After), counted, and logged at warning without the key.
    @Test func presenterKeyGuessingIsLimited() throws {
        let log = CapturedLog()
        let (server, loop) = try Self.server(directory: nil, log: log)
        defer { server.shutdown() }
        let owner = try InProcessClient(server, loop: loop, path: "/rooms/vault?role=presenter&key=right-key")
        #expect(owner.wait { $0.contains(#""type":"welcome""#) })
        for guess in 0..<10 {
            let guesser = try InProcessClient(server, loop: loop, path: "/rooms/vault?role=presenter&key=guess\(guess)")
            #expect(guesser.wait { $0.contains(#""code":"unauthorized""#) }, "guess \(guess): \(guesser.messages)")
        }
        let blocked = try InProcessClient(server, loop: loop, path: "/rooms/vault?role=presenter&key=guess10")
        #expect(blocked.status.contains(" 429 ") && blocked.answer.contains("Retry-After: "), "\(blocked.answer)")
        let elsewhere = try InProcessClient(server, loop: loop, path: "/rooms/vault?role=presenter&key=right-key", from: "127.0.0.4")
        #expect(elsewhere.wait { $0.contains(#""type":"welcome""#) }, "another address with the key is not blocked")
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/vault")
        #expect(follower.upgraded, "following is not limited")
        #expect(Self.get("/metrics", server, loop).contains("scrollsync_presenter_key_failures_total 10"))
        #expect(log.all.filter { $0.hasPrefix("warning presenter key refused") }.count == 10, "\(log.text)")
        #expect(!log.text.contains("guess") && !log.text.contains("right-key"), "no key in the log")
    }

    /// Connections in all and per address: over them 503 and 429 with the limit named; a
    /// closed connection frees its place; /metrics counts the refusals.
    @Test func connectionsInAllAndPerAddress() throws {
        let (server, loop) = try Self.server(directory: nil) { $0.limits.connections = 3 }
        defer { server.shutdown() }
        let open = try (0..<3).map { try InProcessClient(server, loop: loop, path: "/rooms/limits", from: "10.0.0.\($0 + 1)") }
        #expect(open.allSatisfy { $0.upgraded })
        let fourth = try InProcessClient(server, loop: loop, path: "/rooms/limits")
        #expect(fourth.status.hasPrefix("HTTP/1.1 503 ") && fourth.answer.contains("connection limit (3)"), "\(fourth.answer)")

        let (perAddress, perLoop) = try Self.server(directory: nil) { $0.limits.connectionsPerAddress = 2 }
        defer { perAddress.shutdown() }
        let two = try (0..<2).map { _ in try InProcessClient(perAddress, loop: perLoop, path: "/rooms/limits", from: "10.1.1.1") }
        #expect(two.allSatisfy { $0.upgraded })
        let third = try InProcessClient(perAddress, loop: perLoop, path: "/rooms/limits", from: "10.1.1.1")
        #expect(third.status.hasPrefix("HTTP/1.1 429 ") && third.answer.contains("too many connections from 10.1.1.1 (limit 2)"), "\(third.answer)")
        third.connection.hangUp()  // the refused client goes, having read why
        two[0].connection.hangUp()  // and a closed connection frees its place
        let again = try InProcessClient(perAddress, loop: perLoop, path: "/rooms/limits", from: "10.1.1.1")
        #expect(again.upgraded, "a place is free again after a close: \(again.answer)")
        #expect(Self.get("/metrics", perAddress, perLoop).contains(#"scrollsync_handshake_failures_total{status="429"} 1"#))
    }
}
