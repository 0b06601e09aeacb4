@testable import Hub
import Testing

/// A member's last `seq` is kept in 4 bytes; ordering must hold across the 32-bit wrap.
@Suite("Member seq marks")
struct SeqMarkTests {
    @Test(arguments: [0, 1, 41, Int(UInt32.max) - 2, Int(UInt32.max), Int(UInt32.max) + 7, 1 << 40])
    func newerSeqsPrecedeAndOlderOrEqualOnesDoNot(seq: Int) {
        let mark = SeqMark(seq)
        #expect(mark.precedes(seq + 1))
        #expect(mark.precedes(seq + 1_000_000))
        #expect(!mark.precedes(seq))
        if seq > 0 {
            #expect(!mark.precedes(seq - 1))
        }
        if seq >= 1_000_000 {
            #expect(!mark.precedes(seq - 1_000_000))
        }
    }

    @Test func aWelcomeWithoutStateLetsTheFirstStateThrough() {
        #expect(SeqMark(0).precedes(1))
    }
}
