import Foundation
import ScrollModel
import Testing

/// Recordings (Protocol/RECORDING.md): the vector reads as written by hand, what is written
/// reads back, and every kind of bad line is refused naming its line.
@Suite("Recordings")
struct RecordingTests {
    static let vector = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/vectors/recording.jsonl")
    static let header = #"{"format":"scrollsync-recording","version":1,"room":"r","started":"2026-11-26T09:00:00Z","url":"ws://h/rooms/r"}"#
    static let state = #"{"type":"state","seq":1,"offset":0,"viewport":24,"content":124,"direction":"none","by":"00000000000000a1"}"#

    static func read(_ lines: [String]) throws(Recording.Problem) -> Recording {
        try Recording.read(Array(lines.joined(separator: "\n").utf8))
    }

    @Test func theVectorReadsAsWritten() throws {
        let recording = try Recording.read(Array(try Data(contentsOf: Self.vector)))
        #expect(recording.header.room == "talk" && recording.header.url == "wss://talks.example.org/rooms/talk?role=follower")
        #expect(recording.header.document?.name == "talk.md")
        #expect(recording.header.document?.fingerprint == Fingerprint.of("# Talk\n\nIntro.\n\n## Part two\n\nMore.\n"), "the fingerprint is the text's, not the file's")
        #expect(recording.events.map(\.seconds) == [0, 0, 1.5, 4.25, 4.25, 63, 64.5])
        let states = recording.events.compactMap { if case .state(let state) = $0.message { state } else { nil } }
        #expect(states.map(\.seq) == [1, 2, 3])
        #expect(states.map { $0.anchor?.id } == ["talk", "part-two", nil])
        #expect(states.map(\.atBottom) == [false, false, true] && states[1].progress == 0.4, "derived fields computed")
        guard case .driver(let id, let name) = recording.events[1].message else { Issue.record("\(recording.events[1])"); return }
        #expect(id == SessionID("00000000000000a1") && name == "Ann")
    }

    @Test func whatIsWrittenReadsBack() throws {
        let recording = try Recording.read(Array(try Data(contentsOf: Self.vector)))
        let written = ([Recording.headerLine(recording.header)] + recording.events.map(Recording.eventLine)).joined(separator: [10])
        #expect(try Recording.read(Array(written)) == recording)
    }

    @Test(arguments: [
        ("", 1, "empty"),
        ("not json", 1, "not JSON"),
        (#"{"format":"other","version":1}"#, 1, "not a ScrollSync recording"),
        (#"{"format":"scrollsync-recording","version":2,"room":"r","started":"s","url":"u"}"#, 1, "this reader knows version 1"),
        (#"{"format":"scrollsync-recording","version":1,"room":"r","started":"s","url":"ws://h/rooms/r?key=k"}"#, 1, "holds a secret (key)"),
        (#"{"format":"scrollsync-recording","version":1,"room":"r","started":"s","url":"ws://h/rooms/r?a=1&followKey=k"}"#, 1, "holds a secret (followKey)"),
        (#"{"format":"scrollsync-recording","version":1,"room":"r","started":"s","url":"ws://h/rooms/r?token=t"}"#, 1, "holds a secret (token)"),
        ("\(header)\n[1]", 2, "an event is [seconds, message]"),
        ("\(header)\n[-1,\(state)]", 2, "seconds from 0"),
        ("\(header)\n[1e300,\(state)]", 2, "seconds from 0"),
        ("\(header)\n[2,\(state)]\n[1,\(state)]", 3, "before the line above's"),
        ("\(header)\n[1,{\"type\":\"welcome\"}]", 2, "not \"welcome\""),
        ("\(header)\n[1,{\"type\":\"state\",\"seq\":0,\"offset\":1,\"direction\":\"none\",\"by\":\"00000000000000a1\"}]", 2, "seq"),
        ("\(header)\n[1,{\"type\":\"state\",\"seq\":1,\"offset\":1,\"direction\":\"none\",\"by\":\"\\u001b[2J\"}]", 2, "session id"),
        ("\(header)\n[1,{\"type\":\"presence\",\"presenters\":-1,\"followers\":0,\"detached\":0}]", 2, "presence counts"),
        ("\(header)\n[1,{\"type\":\"driver\",\"driver\":\"nope\"}]", 2, "session id or null"),
    ])
    func badLinesAreRefusedNamingTheirLine(_ text: String, _ line: Int, _ reason: String) {
        do {
            let recording = try Recording.read(Array(text.utf8))
            Issue.record("read \(recording)")
        } catch {
            #expect(error.line == line && error.reason.contains(reason), "\(error)")
        }
    }

    /// Issue 44: the header's URL is read as a server reads a query (decoded, any case), and a
    /// fragment is refused: each of these carried a key past the check that looked at the text.
    @Test(arguments: [
        ("ws://h/rooms/r?%6Bey=k", "holds a secret (key)"),
        ("ws://h/rooms/r?Token=t", "holds a secret (token)"),
        ("ws://h/rooms/r?a=1&FOLLOWKEY=f", "holds a secret (followKey)"),
        ("ws://h/rooms/r?follow%4Bey=f", "holds a secret (followKey)"),
        ("ws://h/rooms/r?k%65y", "holds a secret (key)"),
        ("ws://h/rooms/r#key=k", "has a fragment"),
        ("ws://h/rooms/r?a=1#token=t", "has a fragment"),
    ])
    func aSecretInTheHeadersURLIsFoundHoweverItIsSpelled(_ url: String, _ reason: String) {
        let header = #"{"format":"scrollsync-recording","version":1,"room":"r","started":"s","url":"\#(url)"}"#
        do {
            _ = try Recording.read(Array(header.utf8))
            Issue.record("read \(url)")
        } catch {
            #expect(error.line == 1 && error.reason.hasPrefix("\"url\" \(reason)") && error.reason.hasSuffix("a recording never holds one"), "\(error)")
        }
        #expect(QueryText.secretProblem(inURL: "ws://h/rooms/r?role=follower&name=Key%20holder") == nil, "a value may say anything")
    }

    /// A line longer than any event is refused before it is decoded (a 100 MB line once cost
    /// 460 MB to refuse), naming its line and the bound.
    @Test func aLineLongerThanAnyEventIsRefusedBeforeItIsDecoded() {
        var limits = ClientMessage.Limits()
        limits.maxDocumentBytes = 1000
        let bound = Recording.maxLineBytes(limits)
        #expect(bound == 6 * (1000 + 256 + 2048 + 256 + 64) + 1024)
        let text = String(repeating: "\\u0001", count: 1000)  // the longest a 1,000-byte document is written
        let longest = #"[1,{"type":"document","name":"d","format":"text","by":"00000000000000a1","text":"\#(text)"}]"#
        #expect(throws: Never.self) { try Recording.read(Array("\(Self.header)\n\(longest)".utf8), limits: limits) }
        let tooLong = "[1," + String(repeating: " ", count: bound) + "]"
        do {
            _ = try Recording.read(Array("\(Self.header)\n[0,\(Self.state)]\n\(tooLong)".utf8), limits: limits)
            Issue.record("read")
        } catch {
            #expect(error.line == 3 && error.reason.contains("longer than any event (\(bound) bytes)"), "\(error)")
        }
    }

    /// A name (or anything else) that is not UTF-8 is refused, not repaired into U+FFFD.
    @Test func invalidUTF8InANameIsRefused() {
        for bad: [UInt8] in [[0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82]] {
            let line = Array(#"[1,{"type":"driver","driver":"00000000000000a1","name":"An"#.utf8) + bad + Array(#""}]"#.utf8)
            do {
                _ = try Recording.read(Array("\(Self.header)\n".utf8) + line)
                Issue.record("read \(bad)")
            } catch {
                #expect(error.line == 2 && error.reason == "not UTF-8", "\(bad): \(error)")
            }
        }
    }

    @Test func aDocumentOverTheLimitIsRefused() {
        var limits = ClientMessage.Limits()
        limits.maxDocumentBytes = 10
        let line = #"[1,{"type":"document","name":"d","format":"text","by":"00000000000000a1","text":"more than ten bytes"}]"#
        #expect(throws: Recording.Problem.self) { try Recording.read(Array("\(Self.header)\n\(line)".utf8), limits: limits) }
    }
}
