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

    /// What members hear of `effects`: driver changes and states, in order.
    static func heard(_ effects: [Machine.Effect]) -> [String] {
        effects.map { effect -> String in
            switch effect {
            case .broadcast(.driver(let driver, _)): "driver \(driver?.description ?? "none")"
            case .broadcast(.state(let state)): "state \(state.seq)"
            default: "other"
            }
        }
    }

    static func leadEnded(_ effects: [Machine.Effect]) -> Bool { effects.contains { if case .leadEnded = $0 { true } else { false } } }

    /// Ann presents and Bob follows here; the room was fetched: `driver` drives, and it holds
    /// `state` (if any) at `version`.
    func fetched(drivenBy driver: SessionID, holding state: ScrollState?, version: Int = 0) -> Machine {
        var room = RoomMachineTests.room()
        var snapshot = RoomSnapshot()
        snapshot.version = version
        snapshot.driver = driver.description
        snapshot.state = state
        _ = room.step(.snapshot(snapshot), context)
        return room
    }

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

    /// A new lease's first state numbers from the `seq` clock at least, and another node takes
    /// it, however far above its own `seq` (seed 20003 with Redis stops: node 0's new driver
    /// leapt 1,024 above a hash that lagged, onto the `seq` of states a crashed node's driver
    /// had ordered and never written back; docs/cluster.md §7.12).
    @Test func aNewLeasesFirstStateNumbersFromTheSeqClock() {
        var clocked = context
        clocked.seqNow = 40_000_000_000_000
        var holder = RoomMachineTests.room()
        var snapshot = RoomSnapshot()
        snapshot.driver = Self.ann.description
        snapshot.seq = 30_000_000_000_000
        _ = holder.step(.snapshot(snapshot), clocked)
        let effects = holder.step(.lead(ScrollUpdate(offset: 20, viewport: 10, content: 100), from: Self.ann, sender: "ann"), clocked)
        let led = RoomMachineTests.led(effects)
        #expect(led.map(\.seq) == [clocked.seqNow], "the clock, far above the room's seq and its leap")
        #expect(RoomMachineTests.states(effects).map(\.seq) == [clocked.seqNow], "heard at once on the holder's node")
        #expect(holder.step(.led(led[0]), clocked).isEmpty, "its echo adds nothing")
        var other = RoomMachineTests.room()
        _ = other.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), clocked)
        #expect(RoomMachineTests.states(other.step(.led(led[0]), clocked)).map(\.seq) == [clocked.seqNow], "another node takes it, no refetch")
        var forged = led[0]
        forged.seq = clocked.seqNow + SharedTiming.clockSkewMicroseconds + 1
        #expect(other.step(.led(forged), clocked).contains { if case .resync = $0 { true } else { false } }, "beyond the clocks' skew: fetched again")
    }

    /// A node that serves a shared room alone numbers a new driver's first state from the `seq`
    /// clock too (seeds 20006, 20233 with Redis stops: a take applied alone when Redis did not
    /// answer numbered its driver's state one above the room's, as the lease holder's node did
    /// its own); one node without an engine counts from 1 as before.
    @Test func aNewDriversFirstStateAloneNumbersFromTheSeqClock() {
        var clocked = context
        clocked.seqNow = 40_000_000_000_000
        var alone = RoomMachineTests.room()
        let first = RoomMachineTests.states(alone.step(.unshared(RoomMachineTests.scroll(10), from: Self.ann, sender: "ann"), clocked))
        let next = RoomMachineTests.states(alone.step(.unshared(RoomMachineTests.scroll(20), from: Self.ann, sender: "ann"), clocked))
        #expect(first.map(\.seq) == [clocked.seqNow] && next.map(\.seq) == [clocked.seqNow + 1])
        var single = RoomMachineTests.room()
        #expect(RoomMachineTests.states(single.step(.message(RoomMachineTests.scroll(10), from: Self.ann, sender: "ann"), context)).map(\.seq) == [1])
    }

    /// A node that holds no state takes the room's last place passed on by another node, also
    /// when it is not by the driver it knows (seed 41: a new presenter's claim came before the
    /// answers to its node's `Q`, and the room showed nothing there); its members hear it while
    /// they know no driver (I5). An older place of that driver is dropped.
    @Test func aNodeWithoutAStateTakesTheLastPlaceOfAnEarlierDriver() {
        var room = RoomMachineTests.room()
        var snapshot = RoomSnapshot()
        snapshot.driver = Self.carol.description
        snapshot.seq = 30_000_000_000_000
        _ = room.step(.snapshot(snapshot), context)
        let last = Self.state(29_999_999_999_000, by: Self.bob)
        let effects = room.step(.led(last), context)
        #expect(Self.heard(effects) == ["driver none", "state \(last.seq)", "driver \(Self.carol.description)"])
        #expect(room.core.state == last && room.core.driver == Self.carol)
        #expect(room.step(.led(Self.state(29_999_999_998_500, by: Self.bob)), context).isEmpty, "older than the place it holds")
    }

    /// A node that fetched an earlier driver's older place from a hash that lagged (that
    /// driver's node went before its write-back) takes the newer place another node passes on
    /// while the driver it knows, on another node, has not moved; members hear it while they
    /// know no driver (I5). Before, it kept the older place, and after the driver's release
    /// nothing moved it (seed 20131 with Redis stops, write-back coalesced: I2, I6). Once the
    /// driver moved, another driver's state is dropped.
    @Test func aNodeWhoseDriverHasNotMovedTakesAnEarlierDriversNewerPlace() {
        var room = fetched(drivenBy: Self.carol, holding: Self.state(1_000, by: Self.bob))
        let newer = Self.state(1_500, by: Self.bob)
        let effects = room.step(.led(newer), context)
        #expect(Self.heard(effects) == ["driver none", "state 1500", "driver \(Self.carol.description)"])
        #expect(room.core.state == newer && room.core.driver == Self.carol)
        #expect(RoomMachineTests.states(room.step(.led(Self.state(3_000, by: Self.carol)), context)).map(\.seq) == [3_000], "Carol moves")
        #expect(room.step(.led(Self.state(3_500, by: Self.bob)), context).isEmpty, "the driver moved: another driver's is dropped")
        #expect(room.core.state?.seq == 3_000)
    }

    /// A driver who drove before and took control again has not moved under its new lease
    /// while this node holds only its earlier place (named by a change after Bob's turn, or by
    /// a snapshot whose hash held that place): Bob's newer place, passed on, is the room's last
    /// and is taken (I5: driver none first). Before, the node kept Carol's older place, every
    /// other node Bob's (seeds 201536, 202764, 205195, 210495 with Redis stops, follow keys and
    /// signing: Carol's take ran at Redis's thaw after she left). Once Carol moves, Bob's is
    /// dropped as before.
    @Test func aDriverNamedAgainHasNotMovedWhileItsEarlierPlaceIsHeld() {
        var changed = fetched(drivenBy: Self.carol, holding: nil)
        let earlier = Self.state(1_000, by: Self.carol)
        _ = changed.step(.led(earlier), context)
        _ = changed.step(.shared(version: 1, .driver(Self.bob, name: "Bob")), context)
        _ = changed.step(.shared(version: 2, .driver(Self.carol, name: "Carol")), context)
        #expect(changed.core.state == earlier && changed.core.driver == Self.carol)
        var fetchedAgain = fetched(drivenBy: Self.carol, holding: earlier)
        let newer = Self.state(1_500, by: Self.bob)
        for (name, room) in [("named by a change", changed), ("named by a snapshot", fetchedAgain)] {
            var room = room
            #expect(Self.heard(room.step(.led(newer), context)) == ["driver none", "state 1500", "driver \(Self.carol.description)"], "\(name)")
            #expect(room.core.state == newer && room.core.driver == Self.carol, "\(name)")
        }
        _ = fetchedAgain.step(.led(Self.state(3_000, by: Self.carol)), context)
        #expect(fetchedAgain.step(.led(Self.state(3_500, by: Self.bob)), context).isEmpty, "Carol moved: Bob's is dropped")
    }

    /// The lease holder's node whose driver has not moved yet orders its predecessor's newer
    /// place again under its driver when another node passes it on (seed 20123: the node was
    /// paused through the predecessor's last moves; it alone kept an older state).
    @Test func aNewDriversNodeOrdersItsPredecessorsNewerPlaceAgain() {
        var room = fetched(drivenBy: Self.ann, holding: Self.state(1_000, by: Self.carol))
        let newer = Self.state(1_500, by: Self.carol)
        let led = RoomMachineTests.led(room.step(.led(newer), context))
        #expect(led.map(\.by) == [Self.ann.description] && led.map(\.offset) == [newer.offset])
        #expect(led.map(\.seq) == [1_500 + Machine.handoverLeap], "a new lease's first ordering leaps")
        #expect(RoomMachineTests.led(room.step(.led(Self.state(1_600, by: Self.carol)), context)).isEmpty, "once: it ordered under its lease")
    }

    /// The same when the new driver's node holds no state yet (seed 30632: after Redis
    /// restarted empty, a new node's presenter claimed the room before the other nodes merged;
    /// it took the earlier driver's newest place as the room's last, but a node that held that
    /// driver's older place kept it, as a state by another than its driver).
    @Test func aNewDriversNodeWithoutAStateOrdersThePassedOnPlaceAgain() {
        var room = fetched(drivenBy: Self.ann, holding: nil)
        let passed = Self.state(1_500, by: Self.carol)
        let led = RoomMachineTests.led(room.step(.led(passed), context))
        #expect(led.map(\.by) == [Self.ann.description] && led.map(\.offset) == [passed.offset], "ordered again under Ann")
        #expect(led.map(\.seq) == [1_500 + Machine.handoverLeap])
        guard let again = led.first else { return }
        #expect(RoomMachineTests.states(room.step(.led(again), context)) == [again], "heard when it comes back, by Ann")
    }

    /// The lease holder's node whose driver has moved orders the driver's own place again
    /// above a newer state another node passes on (seeds 41381, 41537: a node apart from Redis
    /// numbered a state alone from a clock that ran later, and its merge wrote it into the hash;
    /// the driver's node answered `Q` below it, and the nodes ended on two places).
    @Test func aDriversNodeOrdersItsPlaceAgainAboveANewerPassedOnState() {
        var room = fetched(drivenBy: Self.ann, holding: Self.state(1_000, by: Self.carol))
        let own = RoomMachineTests.lead(20, from: Self.ann, &room)
        #expect(own.map(\.offset) == [20], "Ann moved under her lease")
        let apart = Self.state((own.first?.seq ?? 0) + 500, by: Self.carol)
        let led = RoomMachineTests.led(room.step(.led(apart), context))
        #expect(led.map(\.by) == [Self.ann.description] && led.map(\.offset) == [20], "Ann's place, not the passed-on one")
        #expect(led.map(\.seq) == [apart.seq + Machine.handoverLeap])
        guard let again = led.first else { return }
        #expect(RoomMachineTests.states(room.step(.led(again), context)) == [again], "heard when it comes back: by the driver, above")
        #expect(RoomMachineTests.led(room.step(.led(Self.state(apart.seq + 1, by: Self.carol)), context)).isEmpty, "below it now: dropped")
    }

    /// A change the engine could not confirm because the room went on past it: the room is
    /// fetched again, and until then no led state is taken, nor ordered again under the driver
    /// known here (seed 31637: that driver had lost the lease while its node slept).
    @Test func anOvertakenChangeStopsLedStatesUntilTheRoomIsFetchedAgain() {
        var room = fetched(drivenBy: Self.ann, holding: Self.state(1_000, by: Self.carol))
        #expect(room.step(.changesMissed, context).contains { if case .resync = $0 { true } else { false } })
        #expect(room.step(.led(Self.state(1_500, by: Self.carol)), context).isEmpty, "nothing ordered again, nothing taken")
        var snapshot = RoomSnapshot()
        snapshot.version = 3
        snapshot.state = Self.state(1_000, by: Self.carol)
        _ = room.step(.snapshot(snapshot), context)
        #expect(RoomMachineTests.states(room.step(.led(Self.state(1_600, by: Self.carol)), context)).map(\.seq) == [1_600], "taken again after the fetch")
    }

    /// A presenter here inherits the lease of a driver whose node died: its node orders the
    /// room's place again under it, so that every node ends on one place (seed 30671: nodes held
    /// different places of an earlier driver, and the heir never moved).
    @Test func anHeirsNodeOrdersThePlaceAgainUnderIt() {
        let place = Self.state(1_000, by: Self.carol)
        var room = fetched(drivenBy: Self.carol, holding: place, version: 1)
        #expect(room.step(.keepLease, context).contains { if case .inheritLease(Self.ann, _, Self.carol) = $0 { true } else { false } })
        let inherited = room.step(.shared(version: 2, .driver(Self.ann, name: "Ann")), context)
        let led = RoomMachineTests.led(inherited)
        #expect(led.map(\.by) == [Self.ann.description] && led.map(\.offset) == [place.offset], "\(inherited)")
        #expect(RoomMachineTests.led(room.step(.shared(version: 3, .driver(Self.bob, name: "Bob")), context)).isEmpty, "a take is no inheritance")
    }

    /// A lease that lapses with nobody to inherit it (the driver's node died, no presenter
    /// anywhere): nodes may hold different places of earlier drivers, and nothing orders one
    /// again. The node whose `lapse` ends the turn passes its place on and asks every node for
    /// theirs (`Q`); with nobody driving each takes what is newer than its own, so all end on
    /// the newest. Before, the lapse sent no state (I2 broken after quiescence). A `driver null`
    /// this node did not ask for (a release) sends nothing more.
    @Test func aLapseThisNodeAskedForPassesItsPlaceOnAndAsksForTheNewest() {
        func lapsed(_ effects: [Machine.Effect]) -> (passedOn: [Int], asked: Bool) {
            (effects.compactMap { if case .passOn(let s, false) = $0 { s.seq } else { nil } },
             effects.contains { if case .askNewest = $0 { true } else { false } })
        }
        func followedRoom(holding seq: Int) -> Machine {
            var room = Machine(core: RoomCore(name: "lapse"))
            _ = room.step(.join(.init(id: Self.bob, role: .follower)), context)
            var snapshot = RoomSnapshot()
            snapshot.version = 1
            snapshot.driver = Self.carol.description
            snapshot.state = Self.state(seq, by: Self.ann)  // an earlier driver's place
            _ = room.step(.snapshot(snapshot), context)
            return room
        }
        var older = followedRoom(holding: 1_000), newer = followedRoom(holding: 2_000)
        #expect(older.step(.checkLapse, context).contains { if case .lapseLease(Self.carol) = $0 { true } else { false } })
        #expect(older.step(.lapsed(stale: Self.carol), context).isEmpty, "the engine ordered the lapse")
        let ended = lapsed(older.step(.shared(version: 2, .driver(nil, name: nil)), context))
        #expect(ended.passedOn == [1_000] && ended.asked, "\(ended)")
        // Every node answers the question with its place; the older node takes the newer one.
        _ = newer.step(.checkLapse, context)  // asked too, but another node's lapse came first
        let heard = newer.step(.shared(version: 2, .driver(nil, name: nil)), context)
        #expect(lapsed(heard).passedOn.isEmpty && !lapsed(heard).asked, "this node's lapse did not take effect")
        #expect(newer.step(.stateWanted(now: 1), context).contains { if case .passOn(let s, false) = $0 { s.seq == 2_000 } else { false } })
        #expect(RoomMachineTests.states(older.step(.led(Self.state(2_000, by: Self.ann)), context)).map(\.seq) == [2_000])
        #expect(older.core.state?.seq == 2_000 && older.core.driver == nil)
    }

    /// A session that went while the engine could not take its release (the node apart, or
    /// the engine gone with the release on its way) is released after the next merge that
    /// answers; a leave while the room is served alone asks the engine all the same (it answers
    /// `.unavailable`, `releaseUnsent`). Before, nothing was sent and the lease stayed until it
    /// expired (docs/cluster.md §7.19).
    /// Seed 41082 with Redis stops: the driver sends `release` while her node serves the room
    /// alone and stays. The release is applied here and asked of the engine too (which cannot
    /// take it now: `releaseUnsent`, sent after the merge); one node alone asks nothing.
    @Test func aReleaseAppliedAloneInASharedRoomIsAskedOfTheEngineToo() {
        func released(_ effects: [Machine.Effect]) -> [SessionID] { effects.compactMap { if case .releaseControl(let id) = $0 { id } else { nil } } }
        var alone = Machine.Context(documents: .init(limit: 100), shared: false)
        alone.seqNow = 40_000_000_000_000
        var room = fetched(drivenBy: Self.ann, holding: Self.state(1_000, by: Self.ann))
        #expect(released(room.step(.message(.control(take: false), from: Self.ann, sender: "ann"), alone)) == [Self.ann])
        #expect(room.core.driver == nil, "applied here at once")
        #expect(released(room.step(.message(.control(take: false), from: Self.ann, sender: "ann"), alone)).isEmpty, "not driving: nothing")
        var single = RoomMachineTests.room()
        _ = single.step(.message(.control(take: true), from: Self.ann, sender: "ann"), Machine.Context(documents: .init(limit: 100)))
        #expect(single.core.driver == Self.ann)
        #expect(released(single.step(.message(.control(take: false), from: Self.ann, sender: "ann"), Machine.Context(documents: .init(limit: 100)))).isEmpty,
                "one node alone, no engine")
    }

    @Test func aReleaseTheEngineCouldNotTakeGoesAfterTheMerge() {
        func released(_ effects: [Machine.Effect]) -> [SessionID] { effects.compactMap { if case .releaseControl(let id) = $0 { id } else { nil } } }
        var room = fetched(drivenBy: Self.ann, holding: Self.state(1_000, by: Self.ann))
        #expect(released(room.step(.leave(Self.ann), Machine.Context(documents: .init(limit: 100), shared: false))) == [Self.ann],
                "alone: asked all the same")
        _ = room.step(.releaseUnsent(Self.ann), context)
        _ = room.step(.releaseUnsent(Self.ann), context)
        _ = room.step(.merging, context)
        #expect(released(room.step(.merged(nil), context)).isEmpty, "the engine went away again: still owed")
        _ = room.step(.merging, context)
        #expect(released(room.step(.merged(RoomSnapshot()), context)) == [Self.ann], "once, after the merge")
        _ = room.step(.merging, context)
        #expect(released(room.step(.merged(RoomSnapshot()), context)).isEmpty)
        let many = (1...(Machine.owedReleasesKept + 4)).map { SessionID(UInt64(0x100 + $0)) }
        for id in many { _ = room.step(.releaseUnsent(id), context) }
        _ = room.step(.merging, context)
        #expect(released(room.step(.merged(RoomSnapshot()), context)) == Array(many.suffix(Machine.owedReleasesKept)),
                "the newest \(Machine.owedReleasesKept) at most")
    }

    /// A merge whose node holds a place as new as the room's passes it on: the nodes that
    /// merged first asked while this one could not answer (seed 31435: it was paused), and a
    /// merge without the lease writes it only as the hash's base, so the snapshot's state is
    /// this node's own (seed 41082: every other node kept the driver's place before it). An
    /// older place is not sent.
    @Test func aMergeWithAPlaceAsNewAsTheRoomsPassesItOn() {
        func passedOn(_ effects: [Machine.Effect]) -> [Int] { effects.compactMap { if case .passOn(let s, false) = $0 { s.seq } else { nil } } }
        var room = fetched(drivenBy: Self.carol, holding: Self.state(2_000, by: Self.carol), version: 1)
        _ = room.step(.merging, context)
        var snapshot = RoomSnapshot()
        snapshot.version = 1
        snapshot.state = Self.state(1_000, by: Self.carol)
        #expect(passedOn(room.step(.merged(snapshot), context)) == [2_000])
        _ = room.step(.merging, context)
        snapshot.state = Self.state(2_000, by: Self.carol)
        #expect(passedOn(room.step(.merged(snapshot), context)) == [2_000], "the hash holds it as its base: nobody heard it")
        _ = room.step(.merging, context)
        snapshot.state = Self.state(3_000, by: Self.carol)
        #expect(passedOn(room.step(.merged(snapshot), context)).isEmpty, "the room's is newer")
    }

    /// While its merge is on its way, a node orders nothing under its driver's lease: the merge
    /// publishes the driver's place (numbered by the script, from this node's `seq` clock), and
    /// a state ordered again meanwhile for another node's question took the same number from
    /// the same clock (seed 42381 with Redis stops: two places under one `seq`). Once the merge
    /// is adopted, the node orders above it.
    @Test func aNodeOrdersNothingUnderItsLeaseWhileItsMergeIsOnItsWay() {
        var clocked = context
        clocked.seqNow = 40_000_000_000_000
        var room = fetched(drivenBy: Self.ann, holding: Self.state(5_000, by: Self.ann), version: 1)
        _ = room.step(.merging, clocked)
        #expect(RoomMachineTests.led(room.step(.stateWanted(now: 1_000_000_000), clocked)).isEmpty, "a question")
        #expect(RoomMachineTests.led(room.step(.orderAgain(now: 2_000_000_000), clocked)).isEmpty, "the interval's end")
        #expect(RoomMachineTests.led(room.step(.led(Self.state(6_000, by: Self.bob)), clocked)).isEmpty, "another driver's newer place")
        var snapshot = RoomSnapshot()
        snapshot.version = 2
        snapshot.driver = Self.ann.description
        snapshot.state = Self.state(clocked.seqNow, by: Self.ann)
        snapshot.seq = clocked.seqNow
        _ = room.step(.merged(snapshot), clocked)
        let again = RoomMachineTests.led(room.step(.stateWanted(now: 3_000_000_000), clocked))
        #expect(again.count == 1 && again.allSatisfy { $0.seq > clocked.seqNow }, "after the merge, above its state: \(again.map(\.seq))")
    }

    /// A scroll applied alone (Redis away) numbers above the led states this node ordered, not
    /// only above the state its members hold: a led state that had not come back on the channel
    /// when Redis went away still holds its `seq` on the nodes that heard it (seeds 43286, 43435
    /// with Redis stops).
    @Test func aScrollAppliedAloneNumbersAboveTheLedStatesThisNodeOrdered() {
        var room = fetched(drivenBy: Self.ann, holding: Self.state(5_000, by: Self.ann), version: 1)
        let led = RoomMachineTests.led(room.step(.lead(ScrollUpdate(offset: 20, viewport: 10, content: 100), from: Self.ann, sender: "ann"), context))
        #expect(led.count == 1)
        let alone = RoomMachineTests.states(room.step(.unshared(RoomMachineTests.scroll(30), from: Self.ann, sender: "ann"), context))
        #expect(alone.map(\.seq) == led.map { $0.seq + 1 }, "above \(led.map(\.seq)), not the room's 5000")
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
