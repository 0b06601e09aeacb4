import Testing
@testable import RedisClient

/// The sans-I/O RESP codec (issue 19): every reply type of RESP2 and RESP3, fed whole and
/// byte by byte, and malformed input refused with a reason.
@Suite("RESP")
struct RESPTests {
    static func decode(_ text: String, split: Bool = false) throws -> [RESPDecoder.Item] {
        var decoder = RESPDecoder()
        var items = [RESPDecoder.Item]()
        let bytes = Array(text.utf8)
        for chunk in split ? bytes.map { [$0] } : [bytes] {
            decoder.append(chunk)
            while let item = try decoder.next() { items.append(item) }
        }
        return items
    }

    @Test func commandsAreArraysOfBulkStrings() {
        let bytes = RESP.encode([Array("SET".utf8), Array("k".utf8), Array("a\r\nb".utf8), []])
        #expect(String(decoding: bytes, as: UTF8.self) == "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n$0\r\n\r\n")
    }

    static let replies: [(String, RedisReply, Bool)] = [
        ("+OK\r\n", .status("OK"), false),
        ("-ERR wrong\r\n", .error("ERR wrong"), false),
        (":-42\r\n", .integer(-42), false),
        ("$5\r\nhe\r\no\r\n", .string(Array("he\r\no".utf8)), false),
        ("$0\r\n\r\n", .string([]), false),
        ("$-1\r\n", .null, false),
        ("*-1\r\n", .null, false),
        ("*2\r\n$1\r\na\r\n*1\r\n:1\r\n", .array([.string([97]), .array([.integer(1)])]), false),
        ("_\r\n", .null, false),
        ("#t\r\n", .integer(1), false),
        (",3.25\r\n", .string(Array("3.25".utf8)), false),
        ("(123456789012345678901234567890\r\n", .string(Array("123456789012345678901234567890".utf8)), false),
        ("=8\r\ntxt:some\r\n", .string(Array("some".utf8)), false),
        ("!10\r\nERR broken\r\n", .error("ERR broken"), false),
        ("%1\r\n+proto\r\n:3\r\n", .array([.status("proto"), .integer(3)]), false),
        ("~2\r\n:1\r\n:2\r\n", .array([.integer(1), .integer(2)]), false),
        (">3\r\n$10\r\npsubscribe\r\n$1\r\np\r\n:1\r\n", .array([.string(Array("psubscribe".utf8)), .string([112]), .integer(1)]), true),
        ("|1\r\n+ttl\r\n:3\r\n+after\r\n", .status("after"), false),
    ]

    @Test(arguments: 0..<replies.count)
    func everyReplyTypeWholeAndByteByByte(_ index: Int) throws {
        let (text, reply, push) = Self.replies[index]
        for split in [false, true] {
            let items = try Self.decode(text + "+next\r\n", split: split)
            #expect(items == [.init(reply: reply, isPush: push), .init(reply: .status("next"), isPush: false)], "split: \(split)")
        }
    }

    @Test func anIncompleteReplyWaitsForTheRest() throws {
        var decoder = RESPDecoder()
        decoder.append(Array("*2\r\n$3\r\nfoo\r\n$3\r\nba".utf8))
        #expect(try decoder.next() == nil)
        decoder.append(Array("r\r\n".utf8))
        #expect(try decoder.next()?.reply == .array([.string(Array("foo".utf8)), .string(Array("bar".utf8))]))
        #expect(try decoder.next() == nil)
    }

    @Test(arguments: [
        ("?x\r\n", "unknown type"),
        (":12a\r\n", "not an integer"),
        ("$3\r\nabcde\r\n", "not ended by CRLF"),
        ("$-5\r\n", "bulk length"),
        ("$999999999999\r\n", "bulk length"),
        ("*-2\r\n", "aggregate"),
        ("#x\r\n", "boolean"),
        ("+a\rb\r\n", "CR not followed by LF"),
        (String(repeating: "*1\r\n", count: 40) + ":1\r\n", "nested"),
    ])
    func malformedInputIsRefusedWithAReason(_ text: String, _ reason: String) {
        do {
            _ = try Self.decode(text)
            Issue.record("accepted \(text.debugDescription)")
        } catch {
            #expect("\(error)".contains(reason), "\(error)")
        }
    }

    @Test func aHeaderLineWithoutEndIsRefusedBeforeItGrowsLarge() {
        var decoder = RESPDecoder()
        decoder.append(Array("+".utf8) + [UInt8](repeating: 97, count: 70_000))
        #expect(throws: RedisError.self) { try decoder.next() }
    }

    @Test func scriptsAreNamedByTheirSHA1() {
        // The SHA-1 Redis gives `return 1` (SCRIPT LOAD "return 1").
        #expect(RedisConnection.sha1(Array("return 1".utf8)) == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
    }
}
