@testable import RoomKit
import ScrollModel
import Testing

/// A room's snapshots on their way from Redis and the changes its channel brings meanwhile
/// (the channel and the answers come on two connections, in no fixed order between them).
@Suite("Snapshots on their way")
struct SnapshotWaitTests {
    static let ann = SessionID(0xA).description

    static func snapshot(version: Int, driver: String? = nil, seq: Int? = nil) -> RoomSnapshot {
        var snapshot = RoomSnapshot()
        snapshot.version = version
        snapshot.driver = driver
        snapshot.state = seq.map(state)
        return snapshot
    }

    static func state(_ seq: Int) -> ScrollState {
        ScrollState(seq: seq, offset: Double(seq), viewport: 10, content: 100, progress: Double(seq) / 90, direction: .down, anchor: nil,
                    atTop: false, atBottom: false, by: ann, t: nil, doc: nil)
    }

    /// Seen under load: two merges of one room on their way; the driver's claim ran in Redis
    /// after both, and its change was read before the second answer. The first answer must not
    /// hand the change on (the second, older than it, would then take the room back), and the
    /// second must.
    @Test func whatWasHeardGoesAfterTheLastAnswerOnlyTheChangesNewerThanIt() {
        var wait = SnapshotWait()
        wait.asked()
        wait.asked()
        wait.hear(version: 1, .driver(SessionID(0xA), name: nil))
        let first = wait.answered(Self.snapshot(version: 0))
        #expect(first.snapshot?.version == 0 && first.then.isEmpty && !first.over, "another answer is on its way")
        let second = wait.answered(Self.snapshot(version: 0))
        #expect(second.over)
        #expect(second.then.map(\.version) == [1], "the claim goes to the hub after the last answer")

        var included = SnapshotWait()
        included.asked()
        included.hear(version: 3, .driver(nil, name: nil))
        included.hear(version: 4, .driver(SessionID(0xA), name: nil))
        #expect(included.answered(Self.snapshot(version: 3)).then.map(\.version) == [4], "what the snapshot holds is not handed on")
    }

    @Test func aLedStateHeardMeanwhileFromTheDriverMakesTheSnapshotNewerWithinTheLeap() {
        var wait = SnapshotWait()
        wait.asked()
        wait.hear(version: nil, .state(Self.state(9)))
        wait.hear(version: nil, .state(Self.state(9 + SeqReservation.block + 100)))
        #expect(wait.heardLed(by: Self.ann) && !wait.heardLed(by: SessionID(0xB).description))
        let answer = wait.answered(Self.snapshot(version: 2, driver: Self.ann, seq: 5))
        #expect(answer.snapshot?.state?.seq == 9, "the newest within the leap replaces the hash's")
        #expect(answer.then.count == 2, "led states are handed on too (the room takes the newer ones)")

        var failed = SnapshotWait()
        failed.asked()
        failed.hear(version: 1, .driver(nil, name: nil))
        let none = failed.answered(nil)
        #expect(none.snapshot == nil && none.then.isEmpty && none.over, "a failed fetch hands nothing on")
    }

    /// A question another node asked while the snapshot was on its way (no change) goes to the
    /// hub after the last answer, in the order heard, so that it is answered from what the room
    /// then holds (seed 40989 with Redis stops).
    @Test func aQuestionHeardMeanwhileIsHandedOnInChannelOrder() {
        var wait = SnapshotWait()
        wait.asked()
        wait.hear(version: 3, .driver(nil, name: nil))
        wait.hear(version: nil, nil)
        wait.hear(version: nil, .state(Self.state(9)))
        let answer = wait.answered(Self.snapshot(version: 2))
        #expect(answer.then.map(\.version) == [3, nil, nil])
        #expect(answer.then.map { $0.change == nil } == [false, true, false], "the question between the change and the state")
    }
}
