import Testing
import TestSupport
@testable import ScrollModel

/// The writer puts commas from the last byte it wrote; whatever it writes must parse back
/// to the same value, however values nest.
@Suite("JSONWriter")
struct JSONWriterTests {
    static func randomJSON(depth: Int, _ rng: inout SeededGenerator) -> JSON {
        let strings = ["", "a", "with \"quotes\" and \\", "line\nbreak\ttab\u{1}", "ünïcödé ✓", "{[,:]}", "\u{9B}2J\u{7F}\u{202E}…\u{2069}\u{A0}"]
        switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2:
            let value = Int.random(in: -1000...1000, using: &rng)
            return .number(Double(value), text: String(value))
        case 3: return .string((strings.randomElement(using: &rng) ?? ""))
        case 4: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in randomJSON(depth: depth + 1, &rng) })
        default:
            return .object((0..<Int.random(in: 0...3, using: &rng)).map { _ in
                ((strings.randomElement(using: &rng) ?? ""), randomJSON(depth: depth + 1, &rng))
            })
        }
    }

    @Test func writtenValuesParseBack() throws {
        var rng = SeededGenerator(state: 0x15_0A)
        for _ in 0..<2000 {
            let value = Self.randomJSON(depth: 0, &rng)
            var writer = JSONWriter()
            writer.value(value)
            let text = String(decoding: writer.bytes, as: UTF8.self)
            #expect(try JSON.parse(text) == value, "\(text)")
        }
    }

    /// What a terminal could act on is written as an escape, so a state printed by
    /// `follow --json` stays text on a terminal; other text is copied as it is.
    @Test func terminalControlsAreEscaped() throws {
        var writer = JSONWriter()
        let text = "a\u{1B}[2J\u{7F}\u{9B}31m\u{85}\u{202A}\u{202E}\u{2066}\u{2069}\u{A0}é“—”\u{2028}z"
        writer.string(text)
        let written = String(decoding: writer.bytes, as: UTF8.self)
        #expect(written == #""a\u001b[2J\u007f\u009b31m\u0085\u202a\u202e\u2066\u2069\#u{A0}é“—”\#u{2028}z""#)
        #expect(try JSON.parse(written) == .string(text), "the same string back")
    }

    /// Integers (and integral doubles) are written digit by digit, as `String(value)` would.
    @Test(arguments: [0, 7, 10, -1, -10, 99, 100, 4096, Int.max, Int.min, Int.min + 1])
    func integersAreWrittenInDecimal(value: Int) {
        var writer = JSONWriter()
        writer.beginArray()
        writer.int(value)
        if value.magnitude < 1_000_000_000_000_000 { writer.double(Double(value)) }
        writer.bool(true)
        writer.null()
        writer.endArray()
        let double = value.magnitude < 1_000_000_000_000_000 ? "\(value)," : ""
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "[\(value),\(double)true,null]")
    }

    @Test func commasGoBetweenMembersAndElementsOnly() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a")
        writer.beginArray()
        writer.beginArray()
        writer.endArray()
        writer.beginObject()
        writer.endObject()
        writer.int(1)
        writer.endArray()
        writer.field("b", "x")
        writer.key("c")
        writer.null()
        writer.endObject()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"a":[[],{},1],"b":"x","c":null}"#)
    }
}
