@testable import RoomKit
import ScrollModel
import Testing

/// A shared room's machine against what the engine says of the lease and the hash
/// (docs/cluster.md §7: divergence 2, the `seq` base of a new hash, I5 after a snapshot).
@Suite("Shared room machine")
struct SharedRoomMachineTests {
    typealias Machine = RoomMachineTests.Machine
    static let ann = RoomMachineTests.ann, bob = RoomMachineTests.bob, carol = SessionID(0xC)
    let context = Machine.Context(documents: .init(limit: 100))

    static func leadEnded(_ effects: [Machine.Effect]) -> Bool { effects.contains { if case .leadEnded = $0 { true } else { false } } }

    static func state(_ seq: Int, by id: SessionID) -> ScrollState {
        ScrollState(seq: seq, offset: Double(seq % 1000), viewport: 10, content: 100, progress: 0.5, direction: .down, anchor: nil,
                    atTop: false, atBottom: false, by: id.description, t: nil, doc: nil)
    }

    /// Divergence 2: the node whose driver loses the lease drops its pending write-back, when
    /// the change comes on the channel or in a snapshot; a node whose member never held it does
    /// nothing.
    @Test func losingTheLeaseDropsThePendingWriteBack() {
        var a = RoomMachineTests.room()
        _ = a.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), context)
        _ = RoomMachineTests.lead(120, from: Self.ann, &a)
        #expect(!Self.leadEnded(a.step(.shared(version: 2, .driver(Self.ann, name: "Ann")), context)), "still Ann's")
        #expect(Self.leadEnded(a.step(.shared(version: 3, .driver(Self.bob, name: "Bob")), context)), "Ann's node lost the lease")

        var c = RoomMachineTests.room()
        _ = c.step(.shared(version: 1, .driver(Self.carol, name: "Carol")), context)
        #expect(!Self.leadEnded(c.step(.shared(version: 2, .driver(Self.bob, name: "Bob")), context)), "Carol is no member here")

        var b = RoomMachineTests.room()
        _ = b.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), context)
        var snapshot = RoomSnapshot()
        snapshot.version = 9
        snapshot.driver = Self.bob.description
        #expect(Self.leadEnded(b.step(.snapshot(snapshot), context)), "a snapshot that names another driver")
    }

    /// A new hash's `seq` starts at the wall clock (`RoomSnapshot.seq`): the next state is
    /// numbered above it, also when the snapshot holds no state (a Redis that restarted empty
    /// must not number a state again under a `seq` a node already showed: seed 9).
    @Test func theNextStateIsNumberedAboveTheHashsSeq() {
        var room = RoomMachineTests.room()
        _ = room.step(.message(RoomMachineTests.scroll(10), from: Self.ann, sender: "ann"), context)
        var snapshot = RoomSnapshot()
        snapshot.driver = Self.ann.description
        snapshot.seq = 30_000_000_000_000
        _ = room.step(.snapshot(snapshot), context)
        #expect(room.core.state?.seq == 1, "the state members hold stays")
        let led = RoomMachineTests.led(room.step(.lead(ScrollUpdate(offset: 20, viewport: 10, content: 100), from: Self.ann, sender: "ann"), context))
        #expect(led.map(\.seq) == [snapshot.seq + Machine.handoverLeap])
    }

    /// I5: a snapshot's state by a driver before the snapshot's (the new one has not moved yet)
    /// is heard while members know no driver, or after they are told nobody drives (seed 11: a
    /// node paused through a whole driver's turn).
    @Test func aSnapshotsStateByAnEarlierDriverComesWhileMembersKnowNoOtherDriver() {
        func kinds(_ effects: [Machine.Effect]) -> [String] {
            effects.compactMap { effect -> String? in
                switch effect {
                case .broadcast(.driver(let id, _)): "driver " + (id.map { $0 == Self.bob ? "bob" : "?" } ?? "none")
                case .broadcast(.state(let state)): "state by " + (state.by == Self.carol.description ? "carol" : "?")
                default: nil
                }
            }
        }
        var snapshot = RoomSnapshot()
        snapshot.version = 9
        snapshot.driver = Self.bob.description
        snapshot.state = Self.state(30, by: Self.carol)

        var undriven = RoomMachineTests.room()
        undriven.core.adopt(driver: nil)
        #expect(kinds(undriven.step(.snapshot(snapshot), context)) == ["state by carol", "driver bob"])

        var driven = RoomMachineTests.room()
        _ = driven.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), context)
        #expect(kinds(driven.step(.snapshot(snapshot), context)) == ["driver none", "state by carol", "driver bob"])
    }
}
