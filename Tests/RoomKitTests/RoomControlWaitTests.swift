@testable import RoomKit
import ScrollModel
import Testing

/// Divergence 3 (docs/cluster.md): on a node that shares the room, a take and a new room's
/// first claim wait for their outcome as on one node. The taker's scroll right after `take`
/// waits until the room holds the driver change (its version reaches the one the engine gave
/// the take), then goes again; a presenter's join into a room nobody drives waits for its claim.
@Suite("Room machine: control across nodes")
struct RoomControlWaitTests {
    typealias Machine = RoomMachineTests.Machine
    let shared = Machine.Context(documents: .init(limit: 100), shared: true)
    /// Ann and Bob present, Carol follows.
    static let (ann, bob, carol) = (RoomMachineTests.ann, RoomMachineTests.bob, SessionID(0xC))

    /// Ann drives (the engine said so at version 1); Bob presents and Carol follows, all here.
    func room() -> Machine {
        var room = Machine(core: RoomCore(name: "r"))
        _ = room.step(.join(.init(id: Self.ann, role: .presenter, name: "Ann", afterClaim: true)), shared)
        _ = room.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), shared)
        _ = room.step(.join(.init(id: Self.bob, role: .presenter, name: "Bob")), shared)
        _ = room.step(.join(.init(id: Self.carol, role: .follower)), shared)
        return room
    }

    static func update(_ offset: Double) -> ScrollUpdate { ScrollUpdate(offset: offset, viewport: 10, content: 100) }

    static func ordered(_ effects: [Machine.Effect]) -> (ControlAction, Int)? {
        effects.lazy.compactMap { if case .orderControl(let action, let ticket) = $0 { (action, ticket) } else { nil } }.first
    }

    static func resent(_ effects: [Machine.Effect]) -> [(ScrollUpdate, String)] {
        effects.compactMap { if case .resend(.scroll(let update), let sender) = $0 { (update, sender) } else { nil } }
    }

    static func refusals(_ effects: [Machine.Effect]) -> [(ProtocolError, String)] {
        effects.compactMap { if case .refuse(let error, let sender) = $0 { (error, sender) } else { nil } }
    }

    @Test func aScrollRightAfterTakeWaitsForTheTakeAndThenGoes() throws {
        var room = room()
        let take = room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)
        let (action, ticket) = try #require(Self.ordered(take))
        guard case .take(Self.bob.description, "Bob") = action else { Issue.record("\(action)"); return }
        #expect(room.step(.message(.scroll(Self.update(10)), from: Self.bob, sender: "bob"), shared).isEmpty, "held, not refused")
        #expect(room.step(.message(.scroll(Self.update(20)), from: Self.bob, sender: "bob"), shared).isEmpty, "the newest replaces it")
        #expect(room.step(.controlAnswered(ticket: ticket, .ordered(version: 3)), shared).isEmpty, "ordered, not applied here yet")
        #expect(room.step(.shared(version: 2, .document(SharedDocument(name: "d", format: .text, text: "x", by: Self.ann.description))), shared)
            .allSatisfy { if case .resend = $0 { false } else { true } }, "a change before the take's: still waiting")
        let applied = room.step(.shared(version: 3, .driver(Self.bob, name: "Bob")), shared)
        let resent = Self.resent(applied)
        #expect(resent.map(\.0.offset) == [20] && resent.map(\.1) == ["bob"], "once the room holds the driver change: \(applied)")
        #expect(room.leads(Self.bob) && room.controlWaits.isEmpty)
        // The resend comes back as Bob's message: Bob now leads here.
        let led = room.step(.message(.scroll(resent[0].0), from: Self.bob, sender: "bob"), shared)
        #expect(RoomMachineTests.led(led).map(\.offset) == [20])
    }

    @Test func theTakesAnswerMayComeAfterItsChange() throws {
        var room = room()
        let (_, ticket) = try #require(Self.ordered(room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)))
        _ = room.step(.message(.scroll(Self.update(10)), from: Self.bob, sender: "bob"), shared)
        #expect(Self.resent(room.step(.shared(version: 2, .driver(Self.bob, name: "Bob")), shared)).isEmpty, "no answer yet: it cannot know")
        #expect(Self.resent(room.step(.controlAnswered(ticket: ticket, .ordered(version: 2)), shared)).map(\.0.offset) == [10])
    }

    @Test func aScrollAfterARefusedTakeIsRefusedSayingWhy() throws {
        var room = room()
        let (_, ticket) = try #require(Self.ordered(room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)))
        _ = room.step(.message(.scroll(Self.update(10)), from: Self.bob, sender: "bob"), shared)
        let refused = Self.refusals(room.step(.controlAnswered(ticket: ticket, .refused(ProtocolError(.notDriver, "no"))), shared))
        #expect(refused.map(\.1) == ["bob", "bob"], "the take, then its scroll")
        #expect(refused.last?.0.code == .notDriver && refused.last?.0.message.contains("take was refused") == true, "\(refused)")
        #expect(room.controlWaits.isEmpty && room.core.driver == Self.ann)
    }

    /// The engine went away with the take on its way: taken here, as while it is away, and the
    /// scroll goes again (then applied here too).
    @Test func aTakeTheEngineCouldNotTakeIsTakenHereAndItsScrollGoes() throws {
        var room = room()
        let (_, ticket) = try #require(Self.ordered(room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)))
        _ = room.step(.message(.scroll(Self.update(10)), from: Self.bob, sender: "bob"), shared)
        let alone = Machine.Context(documents: .init(limit: 100))
        let effects = room.step(.controlAnswered(ticket: ticket, .unavailable), alone)
        #expect(effects.contains { if case .broadcast(.driver(Self.bob, _)) = $0 { true } else { false } } && room.core.driver == Self.bob)
        #expect(Self.resent(effects).map(\.0.offset) == [10])
    }

    /// If the engine ordered the take but this node never hears the change (its subscription
    /// lost), the scroll waits no longer than the deadline; a merge's answer ends it too.
    @Test func aTakeWaitsNoLongerThanItsDeadlineOrAMerge() throws {
        var room = room()
        let (_, ticket) = try #require(Self.ordered(room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)))
        _ = room.step(.message(.scroll(Self.update(10)), from: Self.bob, sender: "bob"), shared)
        _ = room.step(.controlAnswered(ticket: ticket, .ordered(version: 9)), shared)
        #expect(Self.resent(room.step(.controlOverdue(ticket: ticket), shared)).map(\.0.offset) == [10])
        #expect(room.step(.controlOverdue(ticket: ticket), shared).isEmpty, "once")

        let (_, second) = try #require(Self.ordered(room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)))
        _ = room.step(.message(.scroll(Self.update(20)), from: Self.bob, sender: "bob"), shared)
        _ = room.step(.controlAnswered(ticket: second, .ordered(version: 40)), shared)
        _ = room.step(.merging, shared)
        var snapshot = RoomSnapshot()
        snapshot.version = 2  // Redis restarted empty: its count starts again
        snapshot.driver = Self.bob.description
        #expect(Self.resent(room.step(.merged(snapshot), shared)).map(\.0.offset) == [20])
        #expect(room.controlWaits.isEmpty)
    }

    /// A taker who left while its take was on its way takes its scroll with it, and gives
    /// control back if it won.
    @Test func aTakerWhoLeftGivesBackTheControlItWon() throws {
        var room = room()
        let (_, ticket) = try #require(Self.ordered(room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)))
        _ = room.step(.message(.scroll(Self.update(10)), from: Self.bob, sender: "bob"), shared)
        _ = room.step(.leave(Self.bob), shared)
        _ = room.step(.controlAnswered(ticket: ticket, .ordered(version: 2)), shared)
        let effects = room.step(.shared(version: 2, .driver(Self.bob, name: "Bob")), shared)
        #expect(Self.resent(effects).isEmpty)
        #expect(effects.contains { if case .releaseControl(Self.bob) = $0 { true } else { false } }, "\(effects)")
    }

    /// A presenter who joins a shared room nobody drives claims control first and joins once
    /// the claim's outcome is known here: its welcome names it driver when the claim wins.
    @Test func aFirstPresentersJoinWaitsForItsClaimAndItsWelcomeNamesIt() throws {
        var room = Machine(core: RoomCore(name: "r"))
        _ = room.step(.join(.init(id: Self.carol, role: .follower)), shared)
        let join = Machine.Event.join(.init(id: Self.bob, role: .presenter, name: "Bob"))
        let first = room.step(join, shared)
        let (action, ticket) = try #require(Self.ordered(first))
        guard case .claim(Self.bob.description, "Bob") = action, first.count == 1 else { Issue.record("\(first)"); return }
        #expect(room.core.members[Self.bob] == nil, "not in the room before its welcome")
        #expect(room.step(.controlAnswered(ticket: ticket, .ordered(version: 1)), shared).isEmpty)
        let applied = room.step(.shared(version: 1, .driver(Self.bob, name: "Bob")), shared)
        #expect(applied.contains { if case .continueJoin(ticket) = $0 { true } else { false } }, "\(applied)")
        let again = room.step(.join(.init(id: Self.bob, role: .presenter, name: "Bob", afterClaim: true)), shared)
        guard case .welcome(let welcome)? = again.first else { Issue.record("\(again)"); return }
        #expect(welcome.driver == Self.bob && welcome.driverName == "Bob")
        #expect(!again.contains { if case .claimControl = $0 { true } else { false } }, "claimed already")
        #expect(again.contains { if case .broadcast(.driver(Self.bob, "Bob")) = $0 { true } else { false } },
                "it hears the driver message after its welcome, as on one node")

        // A claim another node won first: the join goes on, its welcome names nobody here yet.
        var other = Machine(core: RoomCore(name: "o"))
        let (_, lost) = try #require(Self.ordered(other.step(join, shared)))
        let refused = other.step(.controlAnswered(ticket: lost, .refused(ProtocolError(.notDriver, "held"))), shared)
        #expect(refused.count == 1 && refused.contains { if case .continueJoin(lost) = $0 { true } else { false } }, "no refusal to a member not in yet: \(refused)")
        // A key the first presenter binds goes to the engine before its claim (no node sees the
        // room driven and keyless); after the claim, the record it bound proves it.
        var keyless = Machine(core: RoomCore(name: "k2"))
        let binding = keyless.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "rec", against: nil))), shared)
        let (_, bound) = try #require(Self.ordered(binding))
        guard case .bindKey("rec")? = binding.first, binding.count == 2 else { Issue.record("\(binding)"); return }
        _ = keyless.step(.keyBound(kept: "rec", digest: "rec"), shared)
        _ = keyless.step(.controlAnswered(ticket: bound, .ordered(version: 1)), shared)
        _ = keyless.step(.shared(version: 1, .driver(Self.bob, name: nil)), shared)
        let proven = keyless.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "rec", against: nil), afterClaim: true)), shared)
        guard case .welcome(let keyedWelcome)? = proven.first else { Issue.record("not hashed again: \(proven)"); return }
        #expect(keyedWelcome.driver == Self.bob)
        // A wrong key is refused at once, before any claim.
        var keyed = Machine(core: RoomCore(name: "k", state: nil, document: nil, presenterKey: Array("r1".utf8)))
        let wrong = keyed.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "r2", against: "r1"))), shared)
        guard case .joinRefused(let error, true)? = wrong.first else { Issue.record("\(wrong)"); return }
        #expect(error.code == .unauthorized && keyed.controlWaits.isEmpty)
    }

    /// A first presenter's claim wins, but its key lost the binding race to another node's in
    /// the same instant: its join is refused after all. Its node gives the lease back at once
    /// (before: a lease held by a session in no room, until it expired 5 s later).
    @Test func aClaimWhoseJoinIsRefusedGivesTheLeaseBack() throws {
        var room = Machine(core: RoomCore(name: "race"))
        let binding = room.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "mine", against: nil))), shared)
        let (_, ticket) = try #require(Self.ordered(binding))
        _ = room.step(.keyBound(kept: "theirs", digest: "mine"), shared)  // another node bound its key first
        _ = room.step(.controlAnswered(ticket: ticket, .ordered(version: 1)), shared)
        let applied = room.step(.shared(version: 1, .driver(Self.bob, name: "Bob")), shared)
        #expect(applied.contains { if case .continueJoin(ticket) = $0 { true } else { false } })
        let again = room.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "mine", against: nil), afterClaim: true)), shared)
        guard case .hashKey(against: "theirs")? = again.first else { Issue.record("hashed against the kept record: \(again)"); return }
        let refused = room.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "wrong", against: "theirs"))), shared)
        guard case .joinRefused? = refused.first else { Issue.record("\(refused)"); return }
        #expect(refused.contains { if case .releaseControl(Self.bob) = $0 { true } else { false } }, "the lease goes back: \(refused)")
        #expect(room.core.members[Self.bob] == nil)
    }

    static func released(_ effects: [Machine.Effect], _ id: SessionID) -> Bool {
        effects.contains { if case .releaseControl(id) = $0 { true } else { false } }
    }

    /// A first presenter's claim whose outcome this node never learns (no answer within the
    /// deadline, the engine's answer lost to an outage, a merge first): its join goes on, and
    /// the lease may be its all the same. When it goes (it left while the claim was on its way,
    /// its key check after the claim was refused, or it joined and left before the change came
    /// back), its node releases: before, nothing did, and the lease stayed with a session in no
    /// room until it expired (5 s). A release that finds the lease another's does nothing.
    @Test(arguments: ["overdue", "unavailable", "merge"], [false, true])
    func aClaimWhoseOutcomeIsUnknownIsGivenBackWhenItsPresenterGoes(_ end: String, joinedFirst: Bool) throws {
        var room = Machine(core: RoomCore(name: "u"))
        _ = room.step(.join(.init(id: Self.carol, role: .follower)), shared)
        let (_, ticket) = try #require(Self.ordered(room.step(.join(.init(id: Self.bob, role: .presenter, name: "Bob")), shared)))
        let ended: [Machine.Effect]
        switch end {
        case "overdue": ended = room.step(.controlOverdue(ticket: ticket), shared)
        case "unavailable": ended = room.step(.controlAnswered(ticket: ticket, .unavailable), shared)
        default:
            _ = room.step(.merging, shared)
            ended = room.step(.merged(RoomSnapshot()), shared)
        }
        #expect(ended.contains { if case .continueJoin(ticket) = $0 { true } else { false } }, "\(ended)")
        if joinedFirst {
            let again = room.step(.join(.init(id: Self.bob, role: .presenter, name: "Bob", afterClaim: true)), shared)
            guard case .welcome(let welcome)? = again.first else { Issue.record("\(again)"); return }
            #expect(welcome.driver == nil, "nobody drives as far as this node knows")
        }
        let gone = room.step(.leave(Self.bob), shared)
        #expect(Self.released(gone, Self.bob), "\(gone)")
        #expect(!Self.released(room.step(.leave(Self.bob), shared), Self.bob), "once")
    }

    /// A claim whose outcome is unknown, and whose join is then refused while the node serves
    /// the room alone (Redis away): the release is asked all the same (the engine answers
    /// `.unavailable`, and it goes after the merge: `releaseUnsent`, docs/cluster.md §7.19;
    /// before, nothing went and the lease stayed until it expired), and the claim is forgotten.
    @Test func aClaimWhoseJoinIsRefusedWhileAloneIsForgotten() throws {
        var room = Machine(core: RoomCore(name: "alone"))
        let (_, ticket) = try #require(Self.ordered(room.step(.join(.init(id: Self.bob, role: .presenter,
                                                                            key: .hashed(record: "mine", against: nil))), shared)))
        _ = room.step(.keyBound(kept: "theirs", digest: "mine"), shared)
        _ = room.step(.controlOverdue(ticket: ticket), shared)
        #expect(room.unsettledClaims == [Self.bob])
        let alone = Machine.Context(documents: .init(limit: 100))
        let refused = room.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "wrong", against: "theirs"))), alone)
        guard case .joinRefused? = refused.first else { Issue.record("\(refused)"); return }
        #expect(Self.released(refused, Self.bob) && room.unsettledClaims.isEmpty, "\(refused)")
    }

    /// A claim that was refused, or whose change the room holds, is settled: its presenter
    /// going gives back only what it holds.
    @Test func aSettledClaimIsGivenBackOnlyIfItWon() throws {
        var room = Machine(core: RoomCore(name: "s"))
        let (_, lost) = try #require(Self.ordered(room.step(.join(.init(id: Self.bob, role: .presenter, name: "Bob")), shared)))
        _ = room.step(.controlAnswered(ticket: lost, .refused(ProtocolError(.notDriver, "held"))), shared)
        #expect(!Self.released(room.step(.leave(Self.bob), shared), Self.bob), "it lost: nothing to give back")
        let (_, won) = try #require(Self.ordered(room.step(.join(.init(id: Self.ann, role: .presenter, name: "Ann")), shared)))
        _ = room.step(.controlAnswered(ticket: won, .ordered(version: 1)), shared)
        _ = room.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), shared)
        #expect(Self.released(room.step(.leave(Self.ann), shared), Self.ann), "it won and left before its join went on")
        #expect(room.unsettledClaims.isEmpty)
    }

    /// A taker who left while its take's outcome was unknown here (no answer, or an answer whose
    /// change never came back) gives it back at the deadline: before, only a change the room
    /// held that named it did, and the lease stayed with a session in no room for 5 s.
    @Test func aTakerWhoLeftBeforeItsTakesOutcomeWasKnownGivesItBack() throws {
        var room = room()
        let (_, ticket) = try #require(Self.ordered(room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)))
        _ = room.step(.controlAnswered(ticket: ticket, .ordered(version: 7)), shared)  // ordered: Redis gave Bob the lease
        _ = room.step(.leave(Self.bob), shared)
        #expect(Self.released(room.step(.controlOverdue(ticket: ticket), shared), Self.bob), "the change never came back here")
        let dave = SessionID(0xD)
        _ = room.step(.join(.init(id: dave, role: .presenter, name: "Dave")), shared)
        let (_, refused) = try #require(Self.ordered(room.step(.message(.control(take: true), from: dave, sender: "dave"), shared)))
        _ = room.step(.leave(dave), shared)
        #expect(!Self.released(room.step(.controlAnswered(ticket: refused, .refused(ProtocolError(.notDriver, "no"))), shared), dave), "refused: nothing to give back")
    }

    /// A presenter who drove here alone (Redis away) takes control while the room's merge is on
    /// its way: the take goes to the engine (before, nothing: it was the driver shown here, and
    /// the merge then named another node's driver), and its scroll waits for the take, not for
    /// the merge, which names the other driver first.
    @Test func aTakeDuringAMergeByTheDriverShownHereGoesToTheEngine() throws {
        var room = Machine(core: RoomCore(name: "merge"))
        _ = room.step(.join(.init(id: Self.bob, role: .presenter, name: "Bob")), Machine.Context(documents: .init(limit: 100)))
        #expect(room.core.driver == Self.bob, "Bob drives here alone")
        _ = room.step(.merging, shared)
        let take = room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)
        let (action, ticket) = try #require(Self.ordered(take), "the take goes to the engine: \(take)")
        guard case .take(Self.bob.description, "Bob") = action else { Issue.record("\(action)"); return }
        #expect(room.step(.message(.scroll(Self.update(30)), from: Self.bob, sender: "bob"), shared).isEmpty, "held for the take")
        var snapshot = RoomSnapshot()
        snapshot.version = 4
        snapshot.driver = Self.ann.description
        snapshot.driverName = "Ann"
        #expect(Self.resent(room.step(.merged(snapshot), shared)).isEmpty, "the merge names Ann: Bob's scroll still waits")
        _ = room.step(.controlAnswered(ticket: ticket, .ordered(version: 5)), shared)
        let applied = room.step(.shared(version: 5, .driver(Self.bob, name: "Bob")), shared)
        #expect(Self.resent(applied).map(\.0.offset) == [30], "once the take is applied: \(applied)")
        #expect(room.leads(Self.bob))
    }
}
