import Testing
@testable import WebSocketCore

@Suite("RFC 6455 §8.1 UTF-8 validation")
struct UTF8Tests {
    static let invalid: [(String, [UInt8])] = [
        ("overlong NUL, 2 bytes", [0xC0, 0x80]),
        ("overlong slash, 3 bytes", [0xE0, 0x80, 0xAF]),
        ("overlong, 4 bytes", [0xF0, 0x80, 0x80, 0xAF]),
        ("lone continuation", [0x80]),
        ("surrogate U+D800", [0xED, 0xA0, 0x80]),
        ("surrogate U+DFFF", [0xED, 0xBF, 0xBF]),
        ("above U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
        ("lead byte F5", [0xF5, 0x80, 0x80, 0x80]),
        ("byte FE", [0xFE]),
        ("byte FF", [0xFF]),
        ("truncated 3-byte sequence", [0xE2, 0x82]),
        ("ASCII then bad byte after eight", Array("abcdefgh".utf8) + [0xC1, 0xBF]),
    ]

    static let valid: [(String, [UInt8])] = [
        ("ASCII", Array("Hello, world".utf8)),
        ("U+0080", [0xC2, 0x80]),
        ("U+D7FF", [0xED, 0x9F, 0xBF]),
        ("U+E000", [0xEE, 0x80, 0x80]),
        ("U+FFFF", [0xEF, 0xBF, 0xBF]),
        ("U+10000", [0xF0, 0x90, 0x80, 0x80]),
        ("U+10FFFF", [0xF4, 0x8F, 0xBF, 0xBF]),
        ("mixed", Array("κόσμε € 𝄞 done".utf8)),
    ]

    @Test(arguments: invalid.indices)
    func refusesInvalid(_ index: Int) {
        #expect(!UTF8Validator.isValid(Self.invalid[index].1), "\(Self.invalid[index].0)")
    }

    @Test(arguments: valid.indices)
    func acceptsValid(_ index: Int) {
        #expect(UTF8Validator.isValid(Self.valid[index].1), "\(Self.valid[index].0)")
    }

    @Test func validAtEverySplit() {
        let text = Array("a€b𝄞c κόσμε".utf8)
        for split in 0...text.count {
            var validator = UTF8Validator()
            let ok = text[..<split].withUnsafeBytes { validator.feed($0) } && text[split...].withUnsafeBytes { validator.feed($0) }
            #expect(ok && validator.isComplete, "split at \(split)")
        }
    }

    @Test func failsAtTheFirstBadByteNotAtTheEnd() {
        var validator = UTF8Validator()
        let ok = [UInt8]([0x61, 0xED, 0xA0]).withUnsafeBytes { validator.feed($0) }
        #expect(!ok)
    }

    @Test func sequenceCutAtFragmentBoundaryIsJoined() {
        let euro: [UInt8] = [0xE2, 0x82, 0xAC]
        let server = WebSocketConnection(role: .server)
        let input = clientFrame(0x1, [0x61, euro[0]], fin: false) + clientFrame(0x0, [euro[1]], fin: false) + clientFrame(0x0, [euro[2]])
        #expect(server.feed(input) == [.text("a€")])
    }

    @Test func messageEndingInsideASequenceCloses1007() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x1, [0x61, 0xE2, 0x82])) == [.failed(1007)])
    }

    @Test func invalidByteInFirstFragmentFailsBeforeTheMessageEnds() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x1, [0x61, 0xF5], fin: false)) == [.failed(1007)])
    }
}

@Suite("RFC 6455 §5.3 masking")
struct MaskingTests {
    @Test func wordAtATimeMatchesBytewiseAtEveryPhaseAndLength() {
        let key: [UInt8] = [0x12, 0x9A, 0xFE, 0x01]
        let keyValue = Masking.key(at: key)
        for length in 0..<40 {
            for phase in 0..<4 {
                let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
                var fast = data
                fast.withUnsafeMutableBytes { _ = Masking.apply(key: keyValue, to: $0, phase: phase) }
                let slow = data.enumerated().map { $0.element ^ key[($0.offset + phase) % 4] }
                #expect(fast == slow, "length \(length) phase \(phase)")
            }
        }
    }
}

@Suite("RFC 6455 §4.2.2 accept key")
struct AcceptKeyTests {
    @Test func rfcExample() {
        #expect(ServerHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func sha1Vectors() {
        func hex(_ b: [UInt8]) -> String { b.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined() }
        #expect(hex(SHA1.hash([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hex(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(hex(SHA1.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
        // Lengths around the block and padding edges (digests from Python's hashlib).
        let digests = [
            55: "ddf57317ef34bfee3b6df83d359098930eb278bc", 56: "a0d492bb0fc889d0eca3bc137066ab6f4f74f369",
            63: "c55856749bef509bdfe6bfebfc7bf4e793e82132", 64: "bede92be29c3874e1b54ddc77988d606fc857a8e",
            65: "b05a80522b053d6dc7e0a517d0e70212c7dad11f", 119: "504e27376a6e0f0dba8295b85cb25dc4dfa17d23",
            120: "82134b02fb3f702491be9bed581eeab59334acb2", 128: "a09133e6730ffe899efb70204cb5646cd5dc24ee",
            1000: "4231a8a50a10fa9758db8ec71fdef855b751048a",
        ]
        for (length, digest) in digests {
            #expect(hex(SHA1.hash((0..<length).map { UInt8(($0 * 7 + 3) % 256) })) == digest, "\(length) bytes")
        }
    }

    @Test func base64RoundTrip() {
        for length in 0..<20 {
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37) }
            #expect(Base64.decode(Base64.encode(data)) == data)
            #expect(Base64.decodedCount(Base64.encode(data)) == length)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.decode("Zm9vYg==") == Array("foob".utf8))
        #expect(Base64.decode("Zm9vYg=") == nil)
        #expect(Base64.decodedCount("Zm9vYg==") == 4)
        #expect(Base64.decodedCount("dGhlIHNhbXBsZSBub25jZQ==") == 16)
        #expect(Base64.decodedCount("Zm9vYg=") == nil)
        #expect(Base64.decodedCount("Zm9v!mFy") == nil)
        #expect(Base64.decode("Zm9v!mFy") == nil)
    }
}

@Suite("Limits close with 1009")
struct LimitTests {
    @Test func frameOverTheLimitFailsAtItsHeader() {
        let server = WebSocketConnection(role: .server, limits: .init(maxFrameSize: 100, maxMessageSize: 1000))
        // Only the header is fed: the frame is refused before its payload arrives.
        let header = Array(clientFrame(0x2, [UInt8](repeating: 0, count: 101)).prefix(6))
        #expect(server.feed(header) == [.failed(1009)])
    }

    @Test func messageOverTheLimitAcrossFragments() {
        let server = WebSocketConnection(role: .server, limits: .init(maxFrameSize: 100, maxMessageSize: 150))
        let input = clientFrame(0x2, [UInt8](repeating: 0, count: 100), fin: false) + clientFrame(0x0, [UInt8](repeating: 0, count: 51))
        #expect(server.feed(input) == [.failed(1009)])
    }

    @Test func messageAtTheLimitPasses() {
        let server = WebSocketConnection(role: .server, limits: .init(maxFrameSize: 100, maxMessageSize: 150))
        let input = clientFrame(0x2, [UInt8](repeating: 0, count: 100), fin: false) + clientFrame(0x0, [UInt8](repeating: 0, count: 50))
        #expect(server.feed(input) == [.binary([UInt8](repeating: 0, count: 150))])
    }

    @Test func defaultsAreFiniteAndTakeSixteenMebibytes() {
        let limits = WebSocketConnection.Limits()
        #expect(limits.maxMessageSize == 16 << 20)
        #expect(limits.maxFrameSize == 16 << 20)
    }
}
