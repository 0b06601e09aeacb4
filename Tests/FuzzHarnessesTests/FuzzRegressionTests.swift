import HTTP1
import Foundation
@testable import FuzzHarnesses
import ScrollModel
import WebSocketCore
import Testing

/// Every input saved in `Fuzz/regressions/TARGET/` (what a past finding needed) and every seed
/// in `Fuzz/seeds/TARGET/` runs through its fuzz target's invariants here, so that a finding
/// fixed once stays fixed without libFuzzer (issue 22).
@Suite("Fuzz regressions and seeds")
struct FuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    struct Input: Sendable, CustomTestStringConvertible {
        let target: FuzzTarget
        let path: String
        var testDescription: String { "\(target.rawValue): \((path as NSString).lastPathComponent)" }
    }

    static func inputs(in folder: String) -> [Input] {
        FuzzTarget.allCases.flatMap { target -> [Input] in
            let directory = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.sorted().map { Input(target: target, path: directory.appendingPathComponent($0).path) }
        }
    }

    static let regressions = inputs(in: "regressions")
    static let seeds = inputs(in: "seeds")

    /// The findings (issue 22's first campaign: block ids, a zero-width first word, long list
    /// markers, drive durations, URL round trips; later: HTTP status by split, invalid text
    /// before corrupt deflate data both ways, CRLF drive scripts, a refusal's negative length,
    /// a follower's offset of 1e300, a recording's time between two milliseconds) are all kept as
    /// regressions.
    @Test func thePastFindingsAreKept() {
        let targets = Set(Self.regressions.map(\.target))
        #expect(targets.isSuperset(of: [.markdown, .driveScript, .websocketURL, .http, .websocketDeflate, .websocketClient, .followerView, .recording]), "\(targets)")
        #expect(Self.regressions.count >= 16)
        #expect(Set(Self.seeds.map(\.target)) == Set(FuzzTarget.allCases), "every target has seeds")
    }

    @Test(arguments: regressions)
    func regressionStaysFixed(_ input: Input) throws {
        let data = try #require(FileManager.default.contents(atPath: input.path))
        #expect(throws: Never.self) { try input.target.check(Array(data)) }
    }

    @Test(arguments: seeds)
    func seedKeepsTheInvariants(_ input: Input) throws {
        let data = try #require(FileManager.default.contents(atPath: input.path))
        #expect(throws: Never.self) { try input.target.check(Array(data)) }
    }

    /// `Scripts/fuzz` runs every target and no other: its list is FuzzTarget's cases, in order.
    @Test func theFuzzScriptListsEveryTarget() throws {
        let script = try String(contentsOf: Self.fuzzDirectory.deletingLastPathComponent().appendingPathComponent("Scripts/fuzz"), encoding: .utf8)
        let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("targets=(") })
        let listed = line.dropFirst("targets=(".count).prefix { $0 != ")" }.split(separator: " ").map(String.init)
        #expect(listed == FuzzTarget.allCases.map(\.rawValue))
    }

    /// Issue 44's parsing is fuzzed: the secret comparison and the recording's lines and URL.
    @Test func paddedSecretsHiddenSecretsAndLongLinesKeepTheInvariants() {
        #expect(throws: Never.self) { try FuzzTarget.secretCompare([3, 1, 2, 3, 1, 2, 3]) }
        #expect(throws: Never.self) { try FuzzTarget.recording(Array(#"{"format":"scrollsync-recording","version":1,"room":"r","started":"s","url":"ws://h/rooms/r?%6Bey=k"}"#.utf8)) }
        #expect(throws: Never.self) { try FuzzTarget.recording([0x81] + Array(repeating: UInt8(ascii: " "), count: 30_000)) }
    }

    /// The checks can fail: a broken invariant is reported, not swallowed.
    @Test func aBrokenInvariantIsAFinding() {
        #expect(throws: FuzzFinding.self) { try FuzzTarget.expect(false, "broken") }
    }
}

/// The client target's seeds get past the handshake: the fuzzer starts from answers that
/// reach the frames and the server messages in them, compressed or not.
@Suite("Fuzz seeds reach deep")
struct FuzzSeedDepthTests {
    @Test(arguments: [("plain.bin", false, 2), ("deflate.bin", true, 3)])
    func aClientSeedOpensAndCarriesServerMessages(name: String, deflate: Bool, messages: Int) throws {
        let path = FuzzRegressionTests.fuzzDirectory.appendingPathComponent("seeds/websocket-client/\(name)").path
        let data = try #require(FileManager.default.contents(atPath: path).map(Array.init))
        let end = try #require(HTTPResponseHead.end(in: data))
        let response = try #require(HTTPResponseHead.parse(Array(data[..<end])))
        guard case .success(let agreement) = FuzzTarget.clientHandshake.validate(response) else {
            Issue.record("the seed's answer is refused")
            return
        }
        #expect((agreement.deflate != nil) == deflate)
        #expect(agreement.subprotocol == "scrollsync.v1")
        let texts = try FuzzTarget.receive(data[(end + 4)...], splitAt: 7) {
            WebSocketConnection(role: .client, limits: FuzzTarget.frameLimits, deflate: agreement.deflate, maskingKeys: { 7 })
        }
        let events = texts.compactMap(FuzzTarget.serverEventDecoded)
        #expect(events.count == messages, "\(events)")
        #expect(events.contains { if case .welcome = $0 { true } else { false } })
        #expect(events.contains { if case .state = $0 { true } else { false } })
    }

    @Test func everyServerMessageKindHasASeedThatRoundTrips() throws {
        let directory = FuzzRegressionTests.fuzzDirectory.appendingPathComponent("seeds/server-event")
        var kinds = Set<String>()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let data = try #require(FileManager.default.contents(atPath: directory.appendingPathComponent(name).path).map(Array.init))
            let event = try #require(FuzzTarget.serverEventDecoded(data), "\(name) does not decode")
            let encoded = try #require(FuzzTarget.encoded(event))
            #expect(FuzzTarget.serverEventDecoded(encoded) == FuzzTarget.normalized(event), "\(name)")
            kinds.insert("\(event)".prefix { $0 != "(" }.description)
        }
        #expect(kinds == ["welcome", "state", "driver", "document", "presence", "error"])
    }

    /// The round trip is a real check: a welcome whose driver name the encoding drops differs.
    @Test func theRoundTripSeesADroppedField() throws {
        let welcome = ServerEvent.Welcome(room: "r", you: "a", role: .follower, state: nil, driver: nil, driverName: "Ann", presence: Presence(), doc: nil)
        let encoded = try #require(FuzzTarget.encoded(.welcome(welcome)))
        #expect(FuzzTarget.serverEventDecoded(encoded) != .welcome(welcome))
        #expect(FuzzTarget.serverEventDecoded(encoded) == FuzzTarget.normalized(.welcome(welcome)))
    }
}
