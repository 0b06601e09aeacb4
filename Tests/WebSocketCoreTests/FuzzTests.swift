import HTTP1
import TestSupport
import Testing
@testable import WebSocketCore

/// Seeded random-input tests, bounded in iterations: mutated valid input and pure noise,
/// fed at random splits. The parser and decoder must never crash, never deliver invalid
/// UTF-8 as text, never exceed their limits, and always end failed input with a close frame.
@Suite("Fuzzing the HTTP parser and the frame decoder")
struct FuzzTests {
    static let iterations = 20_000

    static func mutate(_ input: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0 where !bytes.isEmpty: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 1 where !bytes.isEmpty: bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
            case 2: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            default: bytes += (0..<Int.random(in: 0..<16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
        }
        return bytes
    }

    static func randomSplits(_ count: Int, _ rng: inout SeededGenerator) -> [Int] {
        var splits = [Int]()
        var total = 0
        while total < count {
            let size = Int.random(in: 1...max(1, count / 3 + 1), using: &rng)
            splits.append(size)
            total += size
        }
        return splits
    }

    @Test func httpParserSurvivesMutatedRequests() {
        var rng = SeededGenerator(state: 0x5C0_11_5C)
        let valid = Array(("GET /rooms/demo?role=presenter HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n").utf8)
        for iteration in 0..<Self.iterations {
            let input = iteration % 4 == 0
                ? (0..<Int.random(in: 0..<600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                : Self.mutate(valid, &rng)
            var parser = HTTPRequestParser(maxHeadBytes: 512)
            var start = 0
            for size in Self.randomSplits(input.count, &rng) {
                let end = min(input.count, start + size)
                let result = input[start..<end].withUnsafeBytes { parser.parse($0) }
                start = end
                switch result {
                case .needMore: continue
                case .failed(let response):
                    #expect([400, 431, 505].contains(response.status), "seed iteration \(iteration)")
                case .complete(let request, _):
                    #expect(request.headers.map(\.name) == Self.referenceFields(input).map(\.name), "seed iteration \(iteration)")
                    #expect(request.headers.map(\.value) == Self.referenceFields(input).map(\.value), "seed iteration \(iteration)")
                    // Whatever parsed must survive validation and negotiation without trapping.
                    if case .success(let upgrade) = ServerHandshake.validate(request) {
                        _ = PerMessageDeflate.negotiate(offers: upgrade.extensions)
                    }
                }
                break
            }
        }
    }

    /// The header fields of a complete head as the simplest reading of RFC 9112 §5 gives
    /// them (lines split at CRLF, name before the first colon, value trimmed of spaces and
    /// tabs): what the in-place parser must agree with.
    static func referenceFields(_ input: [UInt8]) -> [(name: String, value: String)] {
        let crlf: [UInt8] = [13, 10]
        guard let end = (0..<max(0, input.count - 3)).first(where: { input[$0..<($0 + 4)].elementsEqual(crlf + crlf) }) else { return [] }
        var lines = [ArraySlice<UInt8>]()
        var start = 0
        for index in 0..<end where input[index..<(index + 2)].elementsEqual(crlf) {
            lines.append(input[start..<index])
            start = index + 2
        }
        lines.append(input[start..<end])
        return lines.dropFirst().map { line in
            let colon = line.firstIndex(of: UInt8(ascii: ":"))!
            let isOWS = { (byte: UInt8) in byte == 32 || byte == 9 }
            let value = line[(colon + 1)...].drop(while: isOWS)
            let trimmed = value.prefix(value.count - value.reversed().prefix(while: isOWS).count)
            return (String(decoding: line[..<colon], as: UTF8.self), String(decoding: trimmed, as: UTF8.self))
        }
    }

    @Test(arguments: [false, true])
    func frameDecoderSurvivesMutatedStreams(deflate: Bool) {
        var rng = SeededGenerator(state: deflate ? 0xDEF1A7E : 0xF2A3E5)
        let agreed: PerMessageDeflate? = deflate ? PerMessageDeflate() : nil
        let client = WebSocketConnection(role: .client, deflate: agreed, compressionThreshold: 0)
        var valid = [UInt8]()
        for text in ["hello", "κόσμε", String(repeating: "x", count: 300)] {
            client.send(text: text)
            valid += client.takeOutput()
        }
        valid += clientFrame(0x1, Array("frag".utf8), fin: false) + clientFrame(0x9, [1, 2]) + clientFrame(0x0, Array("ment".utf8))
        valid += clientFrame(0x8, [0x03, 0xE8])
        let limits = WebSocketConnection.Limits(maxFrameSize: 1024, maxMessageSize: 2048)
        for iteration in 0..<Self.iterations {
            let input = iteration % 5 == 0
                ? (0..<Int.random(in: 0..<400, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                : Self.mutate(valid, &rng)
            let server = WebSocketConnection(role: .server, limits: limits, deflate: agreed)
            let seen = server.feed(input, splits: Self.randomSplits(input.count, &rng))
            for event in seen {
                if case .invalidText = event { Issue.record("invalid UTF-8 delivered as text, iteration \(iteration)") }
                if case .binary(let b) = event, b.count > limits.maxMessageSize { Issue.record("over the limit, iteration \(iteration)") }
                if case .text(let t) = event, t.utf8.count > limits.maxMessageSize { Issue.record("over the limit, iteration \(iteration)") }
            }
            if case .failed(let code)? = seen.last {
                let output = server.takeOutput()
                #expect(server.state == .closed)
                #expect(closeFrameCode(output) == code, "iteration \(iteration)")
            }
        }
    }

    /// The code of the close frame at the end of server output.
    func closeFrameCode(_ output: [UInt8]) -> UInt16? {
        var index = 0
        var code: UInt16?
        while index + 2 <= output.count {
            let length = Int(output[index + 1] & 0x7F)
            guard length < 126 else { return nil }  // only control frames and small pongs here
            if output[index] == 0x88, length >= 2 { code = UInt16(output[index + 2]) << 8 | UInt16(output[index + 3]) }
            index += 2 + length
        }
        return code
    }
}
