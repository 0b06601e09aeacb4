import Deflate
import Testing
@testable import WebSocketCore

/// Unfinished messages are bounded across connections (`MessageBudget`) and in time.
@Suite("Unfinished messages")
struct UnfinishedMessageTests {
    static let payload = [UInt8](repeating: 0x61, count: 700_000)

    @Test func fragmentsBeyondTheSharedBudgetClose1013AndGiveTheBytesBack() {
        let budget = MessageBudget(limit: 1 << 20)
        let first = WebSocketConnection(role: .server)
        let second = WebSocketConnection(role: .server)
        var seen = [Seen]()
        var start = clientFrame(0x2, Self.payload, fin: false)
        start.withUnsafeMutableBytes { first.receive($0, budget: budget) { seen.append(Seen($0)) } }
        #expect(seen.isEmpty)
        #expect(budget.inUse >= Self.payload.count, "the first message's buffer is counted: \(budget.inUse)")
        start = clientFrame(0x2, Self.payload, fin: false)
        start.withUnsafeMutableBytes { second.receive($0, budget: budget) { seen.append(Seen($0)) } }
        #expect(seen == [.failed(1013)], "the second does not fit: \(seen)")
        #expect(budget.inUse < 1 << 20)
        // The first finishes: its message is delivered whole and the budget is free again.
        seen = []
        var end = clientFrame(0x0, [1, 2, 3], fin: true)
        end.withUnsafeMutableBytes { first.receive($0, budget: budget) { seen.append(Seen($0)) } }
        #expect(seen == [.binary(Self.payload + [1, 2, 3])])
        #expect(budget.inUse == 0, "a large buffer is dropped once delivered: \(budget.inUse)")
        #expect(budget.takeReleased() > 0)
    }

    @Test func aCompressedMessageInflatesOnlyAsFarAsTheBudget() {
        let budget = MessageBudget(limit: 1 << 20)
        let server = WebSocketConnection(role: .server, limits: .init(maxFrameSize: 16 << 20, maxMessageSize: 16 << 20), deflate: PerMessageDeflate())
        var compressed = [UInt8]()
        [UInt8](repeating: 0, count: 8 << 20).withUnsafeBytes { Deflater().compress($0, into: &compressed) }
        var frame = clientFrame(0x2, compressed, fin: false, rsv: 0x40)
        var seen = [Seen]()
        frame.withUnsafeMutableBytes { server.receive($0, budget: budget) { seen.append(Seen($0)) } }
        #expect(seen == [.failed(1013)], "8 MiB would inflate; the budget is 1 MiB: \(seen)")
        #expect(budget.inUse == 0, "the failed message's buffer is freed at once: \(budget.inUse)")
    }

    @Test func aMessageNotFinishedInTimeCloses1008() {
        let server = WebSocketConnection(role: .server)
        var seen = [Seen]()
        var start = clientFrame(0x1, Array("hel".utf8), fin: false)
        start.withUnsafeMutableBytes { server.receive($0) { seen.append(Seen($0)) } }
        for _ in 0..<3 { server.tick(deadlineSeconds: 3) { seen.append(Seen($0)) } }
        #expect(seen.isEmpty, "within the deadline")
        server.tick(deadlineSeconds: 3) { seen.append(Seen($0)) }
        #expect(seen == [.failed(1008)])
        let close = server.takeOutput()
        #expect(close.count > 4 && close[0] == 0x88 && close[2...3] == [0x03, 0xF0], "close 1008 with a reason: \(close)")
    }

    @Test func finishedMessagesDoNotCountTowardTheDeadline() {
        let server = WebSocketConnection(role: .server)
        var seen = [Seen]()
        for round in 0..<10 {
            var start = clientFrame(0x1, Array("a".utf8), fin: false)
            start.withUnsafeMutableBytes { server.receive($0) { seen.append(Seen($0)) } }
            server.tick(deadlineSeconds: 3) { seen.append(Seen($0)) }
            server.tick(deadlineSeconds: 3) { seen.append(Seen($0)) }
            var end = clientFrame(0x0, Array("\(round)".utf8))
            end.withUnsafeMutableBytes { server.receive($0) { seen.append(Seen($0)) } }
        }
        #expect(seen == (0..<10).map { .text("a\($0)") })
    }
}
