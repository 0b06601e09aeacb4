import Access
import Foundation
@testable import Hub
@testable import RoomKit
import ScrollModel
import Testing
import Transport

/// The room's parts that are plain logic, each on its own: the document byte budget, `seq`
/// reservation and the presence throttle.
@Suite("Room parts")
struct RoomPartsTests {
    /// The hub's rooms run the machine RoomKit compiled for them: with a `Sender` of the hub's
    /// own (it was `Unchecked<RoomMember>`), every step ran generic code that looked up its
    /// types' metadata, some 60 instructions more per delivery (docs/benchmarks-log.md).
    @Test func theHubsMachineIsTheOneRoomKitSpecializes() {
        #expect(LocalRoomHub.Room.Machine.self == RoomMachine<MemberReference>.self)
    }

    @Test func theByteBudgetCountsGrowthAndRefusesPastItsLimit() {
        let budget = ByteBudget(limit: 100)
        #expect(budget.reserve(60) == nil)
        #expect(budget.reserve(50)?.code == .tooLarge, "60 + 50 > 100")
        #expect(budget.bytesHeld == 60, "a refused reservation counts nothing")
        #expect(budget.reserve(-20) == nil, "a smaller document always fits")
        #expect(budget.reserve(60) == nil)
        #expect(budget.bytesHeld == 100)
        budget.release(100)
        #expect(budget.bytesHeld == 0)
        let old = SharedDocument(name: "a", format: .text, text: "12345", by: "x")
        #expect(ByteBudget.growth(replacing: old, with: "123") == -2)
        #expect(ByteBudget.growth(replacing: nil, with: "123") == 3)
        #expect(ByteBudget(limit: 0).reserve(1 << 40) == nil, "0 is no limit")
    }

    @Test func concurrentReservationsNeverExceedTheLimit() async {
        let budget = ByteBudget(limit: 10_000)
        let granted = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var mine = 0
                    for _ in 0..<1_000 where budget.reserve(7) == nil { mine += 7 }
                    return mine
                }
            }
            return await group.reduce(0, +)
        }
        #expect(granted == budget.bytesHeld)
        #expect(granted <= 10_000 && granted > 10_000 - 7, "filled to the last 7 bytes, never past: \(granted)")
    }

    @Test func aScrollWaitsUntilTheStoreWroteACeilingAboveIt() {
        var seq = SeqReservation(written: 0)
        #expect(seq.mustWait(after: 0), "a new room's first scroll waits for a written ceiling")
        let first = seq.ceiling(for: 0)
        #expect(first == SeqReservation.block)
        let same = seq.ceiling(for: 100)
        #expect(same == SeqReservation.block, "the same block while less than half is used")
        let free = seq.wrote(SeqReservation.block, lastSeq: 0)
        #expect(free)
        #expect(!seq.mustWait(after: SeqReservation.block - 1))
        #expect(seq.mustWait(after: SeqReservation.block))
        let next = seq.ceiling(for: SeqReservation.block / 2 + 1)
        #expect(next == SeqReservation.block / 2 + 1 + SeqReservation.block, "a block ahead once half is used")
        let older = seq.wrote(10, lastSeq: SeqReservation.block)
        #expect(!older, "an older ceiling never lowers the written one")
        #expect(seq.written == SeqReservation.block)
        #expect(!SeqReservation.unbounded.mustWait(after: Int.max - 1), "without a store nothing waits")
    }

    @Test func presenceGoesOutOncePerIntervalWithLaterChangesTogether() {
        let ms: UInt64 = 1_000_000
        var throttle = PresenceThrottle(intervalMilliseconds: 250)
        let decision1 = throttle.changed(now: 1_000 * ms, members: 3)
        #expect(decision1 == .sendNow)
        throttle.sending(at: 1_000 * ms)
        let decision2 = throttle.changed(now: 1_100 * ms, members: 3)
        #expect(decision2 == .sendAfter(150 * ms))
        let decision3 = throttle.changed(now: 1_200 * ms, members: 4)
        #expect(decision3 == .alreadyScheduled, "one send carries every change in the interval")
        throttle.sending(at: 1_250 * ms)
        let decision4 = throttle.changed(now: 1_600 * ms, members: 4)
        #expect(decision4 == .sendNow)
        throttle.sending(at: 1_600 * ms)
        let decision5 = throttle.changed(now: 2_600 * ms, members: 10_000)
        #expect(decision5 == .sendAfter(9_000 * ms), "a room of 10,000: one presence per 10 s")
    }

    /// A join storm: the first join's count goes at once, the send scheduled for the next
    /// change finds a room grown to 6,000 and waits until 6 s after the last send.
    @Test func aRoomThatGrewWhileASendWaitedWaitsForItsNewSize() {
        let ms: UInt64 = 1_000_000
        var throttle = PresenceThrottle(intervalMilliseconds: 250)
        let start = 1_000 * ms
        #expect(throttle.changed(now: start, members: 1) == .sendNow)
        throttle.sending(at: start)
        #expect(throttle.changed(now: start + 1 * ms, members: 2) == .sendAfter(249 * ms))
        #expect(throttle.waitLeft(now: start + 250 * ms, members: 6_000) == 5_750 * ms, "6,000 members: 6 s since the last send")
        #expect(throttle.waitLeft(now: start + 6_000 * ms, members: 6_000) == nil, "then it goes")
        #expect(throttle.waitLeft(now: start + 250 * ms, members: 200) == nil, "a room that stayed small sends on time")
    }
}

extension RoomPartsTests {
    /// Key admission (one way in for joins and recordings): a right key's record equals the
    /// room's, a wrong one's does not and counts, and checks still running count against the
    /// address as if they failed, so guesses sent at once are not all checked.
    @Test func keyAdmissionChecksOffTheLoopAndCountsRunningChecks() throws {
        let loop = try EventLoop.embedded()
        let admission = KeyAdmission(failuresPerMinute: 2)
        let existing = PresenterKey.record("right", matching: nil, room: "r")
        var outcomes = [KeyAdmission.Outcome]()
        for guess in ["wrong", "right", "third"] {
            admission.check(guess, against: existing, room: "r", address: "10.0.0.1", engine: nil, on: loop) { outcomes.append($0) }
        }
        guard case .limited(let seconds)? = outcomes.first, outcomes.count == 1 else { Issue.record("\(outcomes)"); return }
        #expect(seconds >= 1, "the third waits: two checks are running")
        #expect(loop.advance(until: { outcomes.count == 3 }))
        let records = outcomes.dropFirst().compactMap { if case .checked(let record, let ticket) = $0 { (record, ticket) } else { nil } }
        #expect(records.count == 2)
        #expect(records.map { $0.0 == existing } == [false, true], "only the right key's record is the room's")
        records[0].1.settle(failed: true, now: loop.now)
        records[1].1.settle(failed: false, now: loop.now)
        var after: KeyAdmission.Outcome?
        admission.check("again", against: existing, room: "r", address: "10.0.0.2", engine: nil, on: loop) { after = $0 }
        #expect(loop.advance(until: { after != nil }))
        if case .checked = after {} else { Issue.record("another address is not limited: \(String(describing: after))") }
        // 10.0.0.1 has one wrong key counted: one more check may run, a second waits.
        var next: KeyAdmission.Outcome?, second: KeyAdmission.Outcome?
        admission.check("x", against: existing, room: "r", address: "10.0.0.1", engine: nil, on: loop) { next = $0 }
        admission.check("y", against: existing, room: "r", address: "10.0.0.1", engine: nil, on: loop) { second = $0 }
        if case .limited? = second {} else { Issue.record("one failure and one running check reach 2: \(String(describing: second))") }
        #expect(loop.advance(until: { next != nil }))
    }
}

extension RoomPartsTests {
    /// A server's recording (issue 29.3): a room's messages come from every loop, each with its
    /// own reading of the clock, yet the recording's times never go back; past its limit it
    /// stops, counted against the budget, and what it holds still reads as a recording.
    @Test func aRoomRecordingsTimesNeverGoBackAndItStopsAtItsLimit() throws {
        let budget = RecordingBudget(limit: 0, perAddress: 0)
        let header = Recording.Header(room: "r", started: "2026-11-26T12:00:00.000Z", url: "ws://h/rooms/r")
        var recording = try RoomRecording(header: header, now: 1_000_000_000, limit: 400, budget: budget, ticket: budget.ticket(room: "r", address: "a"))
        let state = #"{"type":"driver","driver":null,"driverName":null}"#
        let first = recording.append(Array(state.utf8), now: 3_000_000_000, budget: budget)
        let earlier = recording.append(Array(state.utf8), now: 2_999_000_000, budget: budget)  // another loop's clock, read a moment before
        let later = recording.append(Array(state.utf8), now: 3_500_000_000, budget: budget)
        #expect(first && earlier && later)
        let read = try Recording.read(recording.bytes)
        #expect(read.events.map(\.seconds) == [2, 2, 2.5])
        var appended = 3
        while recording.append(Array(state.utf8), now: 4_000_000_000, budget: budget) { appended += 1 }
        #expect(recording.stopped != nil && recording.bytes.count <= 400 && appended > 3)
        #expect(budget.bytesHeld == recording.bytes.count, "the budget holds exactly what it keeps")
        #expect(try Recording.read(recording.bytes).events.count == appended)
    }

    /// Issue 44.5: each address pays for the recordings it asked for, within its share; when
    /// all recordings together are at the limit, a room with a presenter takes the bytes of
    /// rooms nobody presents in (the address that holds the most first), never of presented ones.
    @Test func anAddressHasAShareAndUnpresentedRoomsGiveTheirsUpFirst() {
        let budget = RecordingBudget(limit: 1000, perAddress: 400)
        let junk = (0..<3).map { budget.ticket(room: "junk\($0)", address: "192.0.2.1") }
        #expect(budget.reserve(300, for: junk[0]) == nil && budget.reserve(100, for: junk[1]) == nil)
        #expect(budget.reserve(1, for: junk[2]) == .addressShare(400), "the address's share is full")
        let others = (0..<2).map { budget.ticket(room: "other\($0)", address: "198.51.100.\($0)") }
        #expect(budget.reserve(300, for: others[0]) == nil && budget.reserve(300, for: others[1]) == nil)
        #expect(budget.bytesHeld == 1000)
        for ticket in junk + others { ticket.presented.store(false, ordering: .relaxed) }
        others[1].presented.store(true, ordering: .relaxed)
        let late = budget.ticket(room: "talk", address: "203.0.113.9")
        late.presented.store(false, ordering: .relaxed)
        #expect(budget.reserve(200, for: late) == .total(1000), "a room nobody presents in takes nothing from others")
        late.presented.store(true, ordering: .relaxed)
        #expect(budget.reserve(200, for: late) == nil, "a presented room does")
        let dropped = (junk + others).map { $0.dropped.load(ordering: .relaxed) }
        #expect(dropped == [true, false, false, false, false], "the address holding the most goes first, never a presented room: \(dropped)")
        #expect(budget.takeDropped() == ["junk0"] && budget.bytesHeld == 900)
        budget.end(junk[0])
        #expect(budget.bytesHeld == 900, "a dropped recording's bytes are not freed twice")
        for ticket in [junk[1], others[0]] { ticket.presented.store(true, ordering: .relaxed) }
        #expect(budget.reserve(150, for: late) == .total(1000), "presented rooms are never dropped")
        for ticket in [junk[1], others[0], others[1], late] { budget.end(ticket) }
        #expect(budget.bytesHeld == 0)
    }
}
