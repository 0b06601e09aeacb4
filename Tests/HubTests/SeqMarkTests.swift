@testable import Hub
import Testing
import Transport

/// A member's last `seq` is kept in 4 bytes, as its distance from its local room's base; the
/// base moves when the room's numbering leaps (a new Redis hash starts at the wall clock, some
/// 3·10¹³), and the order holds across the move.
@Suite("Member seq marks")
struct SeqMarkTests {
    @Test(arguments: [1, 41, Int(UInt32.max) - 2, Int(UInt32.max) + 7, 1 << 40, 31_561_733_818_076])
    func newerSeqsPrecedeAndOlderOrEqualOnesDoNot(seq: Int) throws {
        let room = LocalRoom(loop: try EventLoop.embedded(), conflation: true, counters: RoomCounters())
        let mark = room.mark(seq)
        #expect(mark.precedes(room.mark(seq + 1)))
        #expect(mark.precedes(room.mark(seq + 1_000_000)))
        #expect(!mark.precedes(room.mark(seq)))
        #expect(!mark.precedes(room.mark(seq - 1)))
    }

    @Test func aWelcomeWithoutStateLetsTheFirstStateThroughHoweverFar() throws {
        let room = LocalRoom(loop: try EventLoop.embedded(), conflation: true, counters: RoomCounters())
        #expect(room.mark(0) == .none)
        #expect(SeqMark.none.precedes(room.mark(1)))
        #expect(SeqMark.none.precedes(room.mark(31_561_733_818_076)), "a cluster room's first state")
    }
}
