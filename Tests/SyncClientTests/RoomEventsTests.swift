import ScrollModel
import Testing
@testable import SyncClient

/// What waits for a slow reader of `RoomSession.events` is bounded (issue 45).
@Suite("RoomSession events for a slow reader")
struct RoomEventsTests {
    static func state(_ seq: Int) -> RoomSession.Event {
        .server(.state(ScrollState(seq: seq, offset: Double(seq), viewport: nil, content: nil, progress: nil, direction: .down,
                                   anchor: nil, atTop: false, atBottom: false, by: "ann", t: nil, doc: nil)))
    }

    static func seqs(_ events: [RoomSession.Event]) -> [String] {
        events.map { event in
            switch event {
            case .server(.state(let state)): "s\(state.seq)"
            case .server(.driver(let id, _)): "d\(id ?? "-")"
            case .server(.presence(let counts)): "p\(counts.followers)"
            case .server(.error(let code, _)): "e\(code)"
            case .roundTrip(let milliseconds): "r\(milliseconds)"
            case .connection: "c"
            default: "?"
            }
        }
    }

    @Test func aReaderThatKeepsUpSeesEveryState() async throws {
        let events = RoomEvents()
        for seq in 1...100 {
            events.push(Self.state(seq))
            #expect(try await events.next() == Self.state(seq))
        }
        #expect(events.replacedStates == 0)
    }

    @Test func aSlowReaderFindsTheNewestStateAndNoBacklog() async throws {
        let events = RoomEvents()
        for seq in 1...10_000 {
            events.push(Self.state(seq))
            events.push(.server(.presence(Presence(presenters: 1, followers: seq % 7))))
            events.push(.roundTrip(milliseconds: seq % 5))
        }
        #expect(Self.seqs(events.waiting) == ["s10000", "p\(10_000 % 7)", "r0"], "one of each kind waits, the newest")
        #expect(events.replacedStates == 9_999)
    }

    @Test func aDriverChangeIsHeardBeforeItsDriversStates() {
        let events = RoomEvents()
        for event in [Self.state(1), .server(.driver("ann", name: "Ann")), Self.state(2), Self.state(3),
                      .server(.driver("bob", name: "Bob")), Self.state(4), Self.state(5)] {
            events.push(event)
        }
        #expect(Self.seqs(events.waiting) == ["s1", "dann", "s3", "dbob", "s5"],
                "a state replaces only a state waiting after the last driver change")
    }

    @Test func otherEventsAreBoundedAndTheDropsCounted() {
        let events = RoomEvents(limit: 8)
        for index in 0..<20 { events.push(.server(.error(code: "\(index)", message: "m"))) }
        #expect(Self.seqs(events.waiting) == (12..<20).map { "e\($0)" }, "the newest 8 wait")
        #expect(events.dropped == 12)
    }

    @Test func theEndComesAfterWhatWaits() async throws {
        let events = RoomEvents()
        events.push(Self.state(1))
        events.finish()
        events.push(Self.state(2))
        #expect(try await events.next() == Self.state(1))
        #expect(try await events.next() == nil)
    }

    @Test func cancellingAWaitingReaderThrows() async {
        let events = RoomEvents()
        let reader = Task { try await events.next() }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
    }
}
