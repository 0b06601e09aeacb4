import Deflate
import Testing
@testable import WebSocketCore

@Suite("RFC 7692 §5, §7 negotiation")
struct NegotiationTests {
    /// (offer header, response header or nil when declined)
    static let table: [(String, String?)] = [
        ("permessage-deflate", "permessage-deflate"),
        ("permessage-deflate; client_max_window_bits", "permessage-deflate"),
        ("permessage-deflate; server_no_context_takeover", "permessage-deflate; server_no_context_takeover"),
        ("permessage-deflate; client_no_context_takeover", "permessage-deflate; client_no_context_takeover"),
        ("permessage-deflate; server_max_window_bits=10", "permessage-deflate; server_max_window_bits=10"),
        ("permessage-deflate; server_max_window_bits=\"8\"", "permessage-deflate; server_max_window_bits=8"),
        ("permessage-deflate; client_max_window_bits=9", "permessage-deflate; client_max_window_bits=9"),
        ("permessage-deflate; server_max_window_bits=16", nil),
        ("permessage-deflate; server_max_window_bits=7", nil),
        ("permessage-deflate; server_max_window_bits=010", nil),
        ("permessage-deflate; server_max_window_bits", nil),
        ("permessage-deflate; client_max_window_bits=x", nil),
        ("permessage-deflate; server_no_context_takeover=1", nil),
        ("permessage-deflate; server_no_context_takeover; server_no_context_takeover", nil),
        ("permessage-deflate; mystery", nil),
        ("x-webkit-deflate-frame", nil),
        // The first acceptable offer wins.
        ("permessage-deflate; server_max_window_bits=99, permessage-deflate; client_no_context_takeover",
         "permessage-deflate; client_no_context_takeover"),
        ("foo, permessage-deflate; server_max_window_bits=12; client_max_window_bits",
         "permessage-deflate; server_max_window_bits=12"),
    ]

    @Test(arguments: table.indices)
    func negotiates(_ index: Int) throws {
        let (offer, expected) = Self.table[index]
        let offers = try #require(ExtensionOffer.parse([offer]))
        #expect(PerMessageDeflate.negotiate(offers: offers)?.1 == expected, "\(offer)")
    }

    @Test(arguments: ["permessage-deflate;", "permessage-deflate; =1", "permessage-deflate; a=\"b", "permessage-deflate; a=\"\"", "perm essage", "permessage-deflate; a=b c"])
    func malformedHeadersAreRejected(_ header: String) {
        #expect(ExtensionOffer.parse([header]) == nil, "\(header)")
    }

    @Test func disabledPolicyDeclines() throws {
        let offers = try #require(ExtensionOffer.parse(["permessage-deflate"]))
        #expect(PerMessageDeflate.negotiate(offers: offers, policy: .init(enabled: false)) == nil)
    }

    @Test func serverMayAddNoContextTakeover() throws {
        let offers = try #require(ExtensionOffer.parse(["permessage-deflate"]))
        let result = PerMessageDeflate.negotiate(offers: offers, policy: .init(alwaysNoContextTakeover: true))
        #expect(result?.1 == "permessage-deflate; server_no_context_takeover")
        #expect(result?.0.serverNoContextTakeover == true)
    }

    @Test func clientChecksTheAnswer() throws {
        let offer = PerMessageDeflate()
        func accept(_ header: String) -> PerMessageDeflate? {
            ExtensionOffer.parse([header]).flatMap { PerMessageDeflate.accept(response: $0[0], offered: offer, offeredClientWindow: true) }
        }
        #expect(accept("permessage-deflate; server_max_window_bits=10")?.serverMaxWindowBits == 10)
        #expect(accept("permessage-deflate; client_max_window_bits=11")?.clientMaxWindowBits == 11)
        #expect(accept("permessage-deflate; client_max_window_bits") == nil)
        #expect(accept("permessage-deflate; bogus") == nil)
    }
}

@Suite("RFC 7692 §7.2 compressed messages")
struct CompressedMessageTests {
    static let parameterSets: [PerMessageDeflate] = [
        PerMessageDeflate(),
        PerMessageDeflate(serverNoContextTakeover: true),
        PerMessageDeflate(clientNoContextTakeover: true),
        PerMessageDeflate(serverNoContextTakeover: true, clientNoContextTakeover: true),
        PerMessageDeflate(serverMaxWindowBits: 9),
        PerMessageDeflate(serverMaxWindowBits: 8),
        PerMessageDeflate(clientMaxWindowBits: 10),
        PerMessageDeflate(serverMaxWindowBits: 15, clientMaxWindowBits: 8),
    ]

    static let messages: [String] = [
        "", "short", String(repeating: "scroll position by id ", count: 50),
        String(repeating: "scroll position by id ", count: 50), "{\"type\":\"state\",\"seq\":1}", String(repeating: "€𝄞", count: 3000),
    ]

    /// A compressed text whose inflated bytes are not UTF-8 and whose deflate data then turns
    /// corrupt fails as invalid UTF-8 (1007) however the frame is split into reads: what came
    /// out first is checked first (a fuzz finding: whole, it failed as bad compression).
    @Test func invalidTextBeforeCorruptDeflateFailsTheSameAtEverySplit() {
        var compressed = [UInt8]()
        let invalid: [UInt8] = [0x61, 0x62, 0xC3, 0x28, 0x63]  // "ab", a broken two-byte sequence, "c"
        invalid.withUnsafeBytes { Deflater().compress($0, into: &compressed) }
        compressed += [0x00, 0x00, 0xFF, 0xFF, 0x07]  // the flush's empty stored block, then a block of the reserved type 3
        let frame = clientFrame(0x1, compressed, rsv: 0x40)
        for split in 0..<frame.count {
            let server = WebSocketConnection(role: .server, deflate: PerMessageDeflate())
            var failures = [WebSocketError]()
            for part in [Array(frame[..<split]), Array(frame[split...])] {
                var bytes = part
                bytes.withUnsafeMutableBytes { server.receive($0) { if case .failed(let error) = $0 { failures.append(error) } } }
            }
            #expect(failures == [.invalidUTF8], "split at \(split)")
        }
    }

    @Test(arguments: parameterSets.indices)
    func bothDirectionsRoundTrip(_ index: Int) {
        let agreed = Self.parameterSets[index]
        let client = WebSocketConnection(role: .client, deflate: agreed, compressionThreshold: 0)
        let server = WebSocketConnection(role: .server, deflate: agreed, compressionThreshold: 0)
        for message in Self.messages {
            client.send(text: message)
            let frame = client.takeOutput()
            if agreed.clientMaxWindowBits != 8 { #expect(frame[0] & 0x40 != 0, "client compressed") }
            #expect(server.feed(frame) == [.text(message)])
            server.send(text: message)
            let reply = server.takeOutput()
            #expect((reply[0] & 0x40 != 0) == (agreed.serverMaxWindowBits != 8), "server compresses unless its window is 8")
            #expect(client.feed(reply) == [.text(message)])
        }
    }

    @Test func compressedFragmentsSplitAtEveryByte() {
        let client = WebSocketConnection(role: .client, deflate: PerMessageDeflate(), compressionThreshold: 0)
        client.send(text: String(repeating: "abc", count: 20))
        let frame = client.takeOutput()
        for split in 1..<frame.count {
            let server = WebSocketConnection(role: .server, deflate: PerMessageDeflate())
            #expect(server.feed(frame, splits: [split]) == [.text(String(repeating: "abc", count: 20))])
        }
    }

    @Test func sameMessageShrinksWithContextTakeover() {
        let client = WebSocketConnection(role: .server, deflate: PerMessageDeflate(), compressionThreshold: 0)
        let text = String(repeating: "the same state again ", count: 10)
        client.send(text: text)
        let first = client.takeOutput().count
        client.send(text: text)
        #expect(client.takeOutput().count < first)
    }

    @Test func belowThresholdIsSentPlain() {
        let server = WebSocketConnection(role: .server, deflate: PerMessageDeflate(), compressionThreshold: 64)
        server.send(text: "tiny")
        #expect(server.takeOutput()[0] == 0x81)
    }

    @Test func bombIsRefusedWithoutAllocatingIt() throws {
        // 64 MiB of zeros deflates to about 64 KiB; the limit is 1 MiB.
        let deflater = Deflater()
        var compressed = [UInt8]()
        [UInt8](repeating: 0, count: 64 << 20).withUnsafeBytes { deflater.compress($0, into: &compressed) }
        #expect(compressed.count < 100_000)
        let inflater = Inflater()
        var output = [UInt8]()
        #expect(throws: InflateError.tooLarge(limit: 1 << 20)) {
            try compressed.withUnsafeBytes { try inflater.inflate($0, final: true, into: &output, limit: 1 << 20) }
        }
        #expect(output.count <= 1 << 20)

        let server = WebSocketConnection(role: .server, limits: .init(maxFrameSize: 1 << 20, maxMessageSize: 1 << 20), deflate: PerMessageDeflate())
        #expect(server.feed(clientFrame(0x2, compressed, rsv: 0x40)) == [.failed(1009)])
    }

    /// The limit is on the message the application gets: random (incompressible) data just
    /// under the limit deflates to a frame a little over it, and is still accepted; one byte
    /// over the limit is refused with 1009, compressed or not.
    @Test func limitsApplyToTheInflatedMessage() {
        let limit = 1 << 20
        var generator = SystemRandomNumberGenerator()
        let random = (0..<(limit + 1)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for (size, accepted) in [(limit - 1, true), (limit, true), (limit + 1, false)] {
            let client = WebSocketConnection(role: .client, deflate: PerMessageDeflate(), compressionThreshold: 0)
            let message = Array(random.prefix(size))
            message.withUnsafeBytes { _ = client.send(binary: $0) }
            let frame = client.takeOutput()
            #expect(frame.count > size, "incompressible data grows when deflated (\(frame.count) bytes for \(size))")
            let server = WebSocketConnection(role: .server, limits: .init(maxFrameSize: limit, maxMessageSize: limit), deflate: PerMessageDeflate())
            let seen = server.feed(frame)
            #expect(seen == (accepted ? [.binary(message)] : [.failed(1009)]), "\(size) bytes: \(seen)")
        }
    }

    @Test func corruptDataCloses1002() {
        let server = WebSocketConnection(role: .server, deflate: PerMessageDeflate())
        #expect(server.feed(clientFrame(0x1, [0xFF, 0xFF, 0xFF, 0xFF], rsv: 0x40)) == [.failed(1002)])
    }

    @Test func invalidUTF8InsideCompressedTextCloses1007() {
        let client = WebSocketConnection(role: .client, deflate: PerMessageDeflate(), compressionThreshold: 0)
        [UInt8]([0x61, 0xED, 0xA0, 0x80, 0x62]).withUnsafeBytes { _ = client.send(text: $0) }
        let server = WebSocketConnection(role: .server, deflate: PerMessageDeflate())
        #expect(server.feed(client.takeOutput()) == [.failed(1007)])
    }
}

@Suite("A compressor shared by connections without context takeover")
struct SharedDeflaterTests {
    @Test func interleavedMessagesDecodeOnEveryConnection() {
        let shared = Deflater(windowBits: 15, noContextTakeover: true)
        let agreed = PerMessageDeflate(serverNoContextTakeover: true)
        let servers = (0..<2).map { _ in WebSocketConnection(role: .server, deflate: agreed, compressionThreshold: 0, sharedDeflater: shared) }
        let clients = (0..<2).map { _ in WebSocketConnection(role: .client, deflate: agreed) }
        for round in 0..<20 {
            for (index, server) in servers.enumerated() {
                let text = String(repeating: "room \(index) state \(round) ", count: 1 + round % 5)
                server.send(text: text)
                let frame = server.takeOutput()
                #expect(frame[0] & 0x40 != 0, "compressed")
                #expect(clients[index].feed(frame) == [.text(text)], "round \(round), connection \(index)")
            }
        }
    }

    @Test func isNotUsedWhenTheServerKeepsContext() {
        let shared = Deflater(windowBits: 15, noContextTakeover: true)
        let server = WebSocketConnection(role: .server, deflate: PerMessageDeflate(), compressionThreshold: 0, sharedDeflater: shared)
        let text = String(repeating: "the same state again ", count: 10)
        server.send(text: text)
        let first = server.takeOutput().count
        server.send(text: text)
        #expect(server.takeOutput().count < first, "its own compressor keeps the window between messages")
    }
}
