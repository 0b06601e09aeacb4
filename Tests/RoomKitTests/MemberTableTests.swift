import RoomKit
import ScrollModel
import TestSupport
import Testing

@Suite("Member table")
struct MemberTableTests {
    /// Random joins, changes and leaves, checked after every step against a `Dictionary`.
    /// Ids come from a small range so that probes collide, runs wrap around the table's
    /// end, and removals shift entries back.
    @Test(arguments: [1, 2, 3])
    func behavesLikeADictionary(seed: UInt64) {
        var random = SeededGenerator(state: seed)
        var table = MemberTable()
        var model: [SessionID: RoomCore.Member] = [:]
        let ids = (0..<300).map { _ in SessionID(random.next()) } + (0..<40).map { SessionID(UInt64($0) << 58) }
        for step in 0..<20_000 {
            let id = ids[Int(random.next() % UInt64(ids.count))]
            switch random.next() % 4 {
            case 0, 1:
                let member = RoomCore.Member(role: random.next() % 2 == 0 ? .presenter : .follower, following: random.next() % 2 == 0)
                table[id] = member
                model[id] = member
            case 2:
                #expect(table.removeValue(forKey: id) == model.removeValue(forKey: id), "step \(step)")
            default:
                table[id]?.following.toggle()
                model[id]?.following.toggle()
            }
            #expect(table.count == model.count, "step \(step)")
            #expect(table[id] == model[id], "step \(step)")
        }
        for id in ids { #expect(table[id] == model[id]) }
    }

    @Test func growsShrinksAndEmpties() {
        var table = MemberTable()
        let ids = (1...1_000).map { SessionID(UInt64($0) &* 0x2545_F491_4F6C_DD1D) }
        for id in ids { table[id] = RoomCore.Member(role: .follower) }
        #expect(table.count == 1_000)
        for id in ids.dropFirst(10) { table[id] = nil }
        #expect(table.count == 10)
        for id in ids.prefix(10) { #expect(table[id] == RoomCore.Member(role: .follower)) }
        for id in ids.dropFirst(10) { #expect(table[id] == nil) }
        for id in ids.prefix(10) { table.removeValue(forKey: id) }
        #expect(table.isEmpty)
        #expect(table[ids[0]] == nil)
    }

    @Test func findsAPresenter() {
        var table = MemberTable()
        #expect(table.firstID(where: { $0.role == .presenter }) == nil)
        for value in 1...50 { table[SessionID(UInt64(value))] = RoomCore.Member(role: .follower) }
        table[SessionID(77)] = RoomCore.Member(role: .presenter)
        #expect(table.firstID(where: { $0.role == .presenter }) == SessionID(77))
    }
}
