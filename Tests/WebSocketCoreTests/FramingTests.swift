import Bytes
import Testing
@testable import WebSocketCore

/// RFC 6455 §5.7: the specification's own examples.
@Suite("RFC 6455 §5.7 examples")
struct RFCExampleTests {
    @Test func unmaskedTextFromServer() {
        let client = WebSocketConnection(role: .client)
        #expect(client.feed([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]) == [.text("Hello")])
    }

    @Test func maskedTextFromClient() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]) == [.text("Hello")])
    }

    @Test func fragmentedUnmaskedText() {
        let client = WebSocketConnection(role: .client)
        #expect(client.feed([0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]) == [.text("Hello")])
    }

    @Test func unmaskedPingIsAnsweredWithPong() {
        let client = WebSocketConnection(role: .client)
        #expect(client.feed([0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]) == [.ping(bytes("Hello"))])
        let pong = client.takeOutput()
        #expect(pong[0] == 0x8A)
        #expect(pong[1] == 0x85)  // masked, five bytes
        let key = Array(pong[2..<6])
        #expect(pong[6...].enumerated().map { $0.element ^ key[$0.offset % 4] } == bytes("Hello"))
    }

    @Test func maskedPongFromClient() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed([0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]) == [.pong(bytes("Hello"))])
        #expect(server.takeOutput().isEmpty)
    }

    @Test func binary256WithSixteenBitLength() {
        let payload = (0..<256).map { UInt8($0) }
        let client = WebSocketConnection(role: .client)
        #expect(client.feed([0x82, 0x7E, 0x01, 0x00] + payload) == [.binary(payload)])
    }

    @Test func binary64KiBWithSixtyFourBitLength() {
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let client = WebSocketConnection(role: .client)
        #expect(client.feed([0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0] + payload) == [.binary(payload)])
    }

    @Test func encoderWritesTheSameBytes() {
        #expect(FrameEncoder.frame(opcode: .text, payload: bytes("Hello")).array == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        let masked = FrameEncoder.frame(opcode: .text, payload: bytes("Hello"), maskKey: Masking.key(at: [UInt8]([0x37, 0xFA, 0x21, 0x3D])))
        #expect(masked.array == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        let long = FrameEncoder.frame(opcode: .binary, payload: [UInt8](repeating: 1, count: 65536)).array
        #expect(Array(long.prefix(10)) == [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
    }
}

@Suite("RFC 6455 §5.2 incremental decoding")
struct SplitTests {
    /// A stream of frames: fragmented text with a ping in between, binary of each length
    /// class, and a close.
    static let stream: [UInt8] =
        clientFrame(0x1, bytes("Hel"), fin: false) + clientFrame(0x9, bytes("?")) + clientFrame(0x0, bytes("lo €"), fin: true)
        + clientFrame(0x2, [UInt8](repeating: 9, count: 200)) + clientFrame(0x2, []) + clientFrame(0x1, bytes("ok"))
        + clientFrame(0x8, [0x03, 0xE8] + bytes("bye"))

    static let expected: [Seen] = [
        .ping(bytes("?")), .text("Hello €"), .binary([UInt8](repeating: 9, count: 200)), .binary([]), .text("ok"), .closed(1000, "bye"),
    ]

    @Test func wholeStream() {
        #expect(WebSocketConnection(role: .server).feed(Self.stream) == Self.expected)
    }

    @Test func splitAtEveryByte() {
        for split in 1..<Self.stream.count {
            let seen = WebSocketConnection(role: .server).feed(Self.stream, splits: [split])
            #expect(seen == Self.expected, "split at \(split)")
        }
    }

    @Test func oneByteAtATime() {
        let seen = WebSocketConnection(role: .server).feed(Self.stream, splits: Array(repeating: 1, count: Self.stream.count))
        #expect(seen == Self.expected)
    }

    @Test func largeFrameSplitAcrossReads() {
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0) }
        let frame = clientFrame(0x2, payload)
        for pieces in [[3], [1, 13], [65536], [7, 9, 11, 65536, 5]] {
            #expect(WebSocketConnection(role: .server).feed(frame, splits: pieces) == [.binary(payload)])
        }
    }
}

@Suite("RFC 6455 §5.1–5.5 protocol errors close with 1002")
struct ProtocolErrorTests {
    static let cases: [(String, [UInt8])] = [
        ("unmasked client frame", [0x81, 0x02, 0x68, 0x69]),
        ("reserved opcode 3", clientFrame(0x3, [])),
        ("reserved control opcode 0xB", clientFrame(0xB, [])),
        ("RSV1 without deflate", clientFrame(0x1, bytes("x"), rsv: 0x40)),
        ("RSV2", clientFrame(0x1, bytes("x"), rsv: 0x20)),
        ("RSV3", clientFrame(0x1, bytes("x"), rsv: 0x10)),
        ("continuation without start", clientFrame(0x0, bytes("x"))),
        ("new message inside fragmented one", clientFrame(0x1, bytes("a"), fin: false) + clientFrame(0x1, bytes("b"))),
        ("fragmented ping", clientFrame(0x9, [], fin: false)),
        ("ping of 126 bytes", clientFrame(0x9, [UInt8](repeating: 0, count: 126))),
        ("close with one byte", clientFrame(0x8, [0x03])),
        ("close code 1005", clientFrame(0x8, [0x03, 0xED])),
        ("close code 999", clientFrame(0x8, [0x03, 0xE7])),
        ("close code 1016", clientFrame(0x8, [0x03, 0xF8])),
        ("close code 5000", clientFrame(0x8, [0x13, 0x88])),
        ("64-bit length with high bit", [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4]),
    ]

    @Test(arguments: cases.indices)
    func failsWith1002(_ index: Int) {
        let (name, input) = Self.cases[index]
        let server = WebSocketConnection(role: .server)
        let seen = server.feed(input)
        #expect(seen.last == .failed(1002), "\(name)")
        #expect(server.state == .closed)
        let output = server.takeOutput()
        #expect(output.count >= 4 && output[0] == 0x88 && output[2] == 0x03 && output[3] == 0xEA, "close 1002 for \(name)")
    }

    @Test func serverRefusesMaskedFramesFromServer() {
        let client = WebSocketConnection(role: .client)
        #expect(client.feed(clientFrame(0x1, bytes("x"))) == [.failed(1002)])
    }

    @Test func nothingIsDecodedAfterAFailure() {
        let server = WebSocketConnection(role: .server)
        let seen = server.feed(clientFrame(0x3, []) + clientFrame(0x1, bytes("late")))
        #expect(seen == [.failed(1002)])
    }
}

@Suite("RFC 6455 §5.5 control frames")
struct ControlFrameTests {
    @Test func pingBetweenFragmentsIsAnsweredAtOnce() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x1, bytes("a"), fin: false) + clientFrame(0x9, bytes("p"))) == [.ping(bytes("p"))])
        #expect(server.takeOutput() == [0x8A, 0x01, 0x70])
        #expect(server.feed(clientFrame(0x0, bytes("b"))) == [.text("ab")])
    }

    @Test func pingWith125BytesIsEchoed() {
        let payload = [UInt8](repeating: 0xFE, count: 125)
        let server = WebSocketConnection(role: .server)
        _ = server.feed(clientFrame(0x9, payload))
        #expect(server.takeOutput() == [0x8A, 125] + payload)
    }

    /// A control frame whole in one read is answered from the read buffer; split over
    /// reads, its payload is gathered first. Both answer with the same bytes.
    @Test func pingSplitOverReadsIsEchoedWhole() {
        let payload = (0..<100).map { UInt8($0) }
        let frame = clientFrame(0x9, payload)
        for split in 1..<frame.count {
            let server = WebSocketConnection(role: .server)
            #expect(server.feed(frame, splits: [split]) == [.ping(payload)], "split at \(split)")
            #expect(server.takeOutput() == [0x8A, 100] + payload, "split at \(split)")
        }
    }
}

/// The client's masking keys are injectable (issue 19): with the same keys, the codec's output
/// is the same bytes every time, and those bytes are the RFC's masked frames.
@Suite("Deterministic masking")
struct DeterministicMaskingTests {
    static func clientBytes(keys: [UInt32]) -> [UInt8] {
        var next = keys.makeIterator()
        let client = WebSocketConnection(role: .client, maskingKeys: { next.next() ?? 0 })
        _ = client.send(text: "Hello")
        _ = client.send(text: "Hello")
        var bytes = [UInt8]()
        client.drainOutbound { bytes += $0.array }
        return bytes
    }

    @Test func theSameKeysGiveTheSameBytes() {
        let keys: [UInt32] = [0x37FA213D, 0x01020304]
        #expect(Self.clientBytes(keys: keys) == Self.clientBytes(keys: keys))
        #expect(Self.clientBytes(keys: keys) != Self.clientBytes(keys: [0x01020304, 0x37FA213D]))
    }

    /// RFC 6455 §5.7: "Hello" masked with 37 fa 21 3d is 81 85 37 fa 21 3d 7f 9f 4d 51 58 (a
    /// key goes on the wire in its memory order: 0x3D21FA37 on this little-endian machine).
    @Test func theRFCsMaskedExample() {
        let bytes = Self.clientBytes(keys: [0x3D21FA37, 0x3D21FA37])
        #expect(Array(bytes.prefix(11)) == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        let server = WebSocketConnection(role: .server)
        var seen = [Seen]()
        var copy = bytes
        copy.withUnsafeMutableBytes { server.receive($0) { seen.append(Seen($0)) } }
        #expect(seen == [.text("Hello"), .text("Hello")])
    }
}

@Suite("A server's first frames, written after its 101")
struct AppendedFrameTests {
    /// What `appendFrame` writes is the frame `send` would queue, after what was there.
    @Test(arguments: [0, 5, 125, 126, 300, 70_000])
    func anAppendedFrameIsTheQueuedFrame(length: Int) {
        let text = [UInt8](repeating: UInt8(ascii: "w"), count: length)
        let appending = WebSocketConnection(role: .server)
        var bytes = Array("HTTP/1.1 101 Switching Protocols\r\n\r\n".utf8)
        let head = bytes
        let length = text.withUnsafeBytes { appending.appendFrame(text: $0, to: &bytes) }
        let queuing = WebSocketConnection(role: .server)
        #expect(text.withUnsafeBytes { queuing.send(text: $0) })
        let queued = queuing.takeOutput()
        #expect(bytes == head + queued)
        #expect(length == queued.count)
        #expect(!appending.hasOutbound)
    }

    /// Whenever the frame could not go in that order or form, nothing is appended and the
    /// caller sends it as usual: something is queued before it, the connection is closing,
    /// it would be compressed, or the connection is a client's (its frames are masked).
    @Test func aFrameThatMustBeQueuedIsNotAppended() {
        let text = Array(String(repeating: "scroll ", count: 20).utf8)
        func appends(_ connection: WebSocketConnection) -> Bool {
            var bytes: [UInt8] = [1, 2, 3]
            let appended = text.withUnsafeBytes { connection.appendFrame(text: $0, to: &bytes) } != nil
            #expect(appended || bytes == [1, 2, 3], "refused, yet it wrote")
            return appended
        }
        let queued = WebSocketConnection(role: .server)
        queued.sendPing()
        #expect(!appends(queued))
        let closing = WebSocketConnection(role: .server)
        closing.close(code: .goingAway)
        #expect(!appends(closing))
        #expect(!appends(WebSocketConnection(role: .server, deflate: PerMessageDeflate(), compressionThreshold: 64)))
        #expect(appends(WebSocketConnection(role: .server, deflate: PerMessageDeflate(), compressionThreshold: 1024)))
        #expect(!appends(WebSocketConnection(role: .client)))
    }
}
