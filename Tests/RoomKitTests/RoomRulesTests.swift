@testable import RoomKit
import ScrollModel
import Testing

/// The rules the hub applied by hand before issue 45.2, now steps of the room's machine: pure,
/// with no loop, socket, store or engine (members are plain strings, as in `RoomMachineTests`).
@Suite("Room rules in the machine")
struct RoomRulesTests {
    typealias Machine = RoomMachine<String>
    static let ann = RoomMachineTests.ann
    static let bob = RoomMachineTests.bob
    static let carol = SessionID(0xC)

    let alone = Machine.Context(documents: .init(limit: 100))
    let shared = Machine.Context(documents: .init(limit: 100), shared: true)

    static func sent(_ effects: [Machine.Effect]) -> [Machine.SharedRequest] {
        effects.compactMap { if case .share(let request, _, _, _) = $0 { request } else { nil } }
    }

    static func refusal(_ effects: [Machine.Effect], to sender: String) -> ProtocolError? {
        guard case .refuse(let error, let to)? = effects.first, to == sender, effects.count == 1 else { return nil }
        return error
    }

    static func names(_ effects: [Machine.Effect]) -> [String] {
        effects.map { effect in
            switch effect {
            case .save: "save"
            case .evictFollowers: "evict"
            case .evictPresenters: "evictPresenters"
            case .publishFollowKey: "publishFollowKey"
            case .followKeyNotSet: "followKeyNotSet"
            case .bindKey: "bindKey"
            case .renewLease: "renew"
            case .inheritLease: "inherit"
            case .passOn(_, let keep): keep ? "passOn(keep)" : "passOn"
            case .scheduleOrderAgain: "schedule"
            case .publishLed: "publishLed"
            case .broadcast(.state): "state"
            case .broadcast(.presence): "presence"
            case .broadcast(.driver): "driver"
            default: "other"
            }
        }
    }

    // MARK: A member's change in a shared room

    /// A shared room checks a member's change by the same rules as a room alone, and sends it to
    /// the engine only when it is allowed and changes something.
    @Test func aSharedRoomChecksRolesBeforeTheEngine() {
        var room = RoomMachineTests.room()
        let follower = room.step(.message(.control(take: true), from: Self.bob, sender: "bob"), shared)
        #expect(Self.refusal(follower, to: "bob")?.code == .unauthorized, "only presenters may take control")
        #expect(room.step(.message(.control(take: true), from: Self.ann, sender: "ann"), shared).isEmpty, "the driver takes again: nothing")
        _ = room.core.join(Self.carol, role: .presenter, name: "Carol", key: nil)
        let release = room.step(.message(.control(take: false), from: Self.carol, sender: "carol"), shared)
        #expect(Self.refusal(release, to: "carol")?.code == .notDriver)
        let take = room.step(.message(.control(take: true), from: Self.carol, sender: "carol"), shared)
        guard case .orderControl(.take(let session, "Carol"), _)? = take.first else {
            Issue.record("a presenter's take goes to the engine, its outcome awaited (RoomControlWaitTests)"); return
        }
        #expect(session == Self.carol.description)
        guard case .control(.release)? = Self.sent(room.step(.message(.control(take: false), from: Self.ann, sender: "ann"), shared)).first else {
            Issue.record("the driver's release goes to the engine"); return
        }
        #expect(room.core.driver == Self.ann, "the engine changes the driver, not this step")
        let document = ClientMessage.document(name: "d", format: .text, text: "hello")
        #expect(Self.refusal(room.step(.message(document, from: Self.bob, sender: "bob"), shared), to: "bob")?.code == .unauthorized)
        guard case .document(let sent)? = Self.sent(room.step(.message(document, from: Self.ann, sender: "ann"), shared)).first else {
            Issue.record("a presenter's document goes to the engine"); return
        }
        #expect(sent.text == "hello" && sent.by == Self.ann.description && room.core.document == nil)
        let large = ClientMessage.document(name: "d", format: .text, text: String(repeating: "x", count: 101))
        #expect(Self.refusal(room.step(.message(large, from: Self.ann, sender: "ann"), shared), to: "ann")?.code == .tooLarge,
                "over the node's budget before it goes anywhere")
    }

    /// A scroll proposed to the engine takes its direction from the last one this node proposed
    /// (the engine has not brought it back yet); a follower's `follow` stays on this node.
    @Test func aSharedRoomProposesScrollsInOrderAndKeepsFollowHere() {
        var room = RoomMachineTests.room()
        func update(_ offset: Double) -> ClientMessage { .scroll(ScrollUpdate(offset: offset, viewport: 10, content: 100)) }
        guard case .scroll(let first)? = Self.sent(room.step(.message(update(50), from: Self.ann, sender: "ann"), shared)).first,
              case .scroll(let second)? = Self.sent(room.step(.message(update(40), from: Self.ann, sender: "ann"), shared)).first,
              case .scroll(let third)? = Self.sent(room.step(.message(update(45), from: Self.ann, sender: "ann"), shared)).first else {
            Issue.record("the driver's scrolls go to the engine"); return
        }
        #expect(first.offset == 50 && second.direction == .up && third.direction == .down,
                "each after the one proposed before it, not after the room's (none yet)")
        #expect(room.proposed == third && room.core.state == nil)
        #expect(Self.refusal(room.step(.message(update(1), from: Self.bob, sender: "bob"), shared), to: "bob")?.code == .notDriver)
        let detached = room.step(.message(.follow(false), from: Self.bob, sender: "bob"), shared)
        #expect(Self.names(detached) == ["presence"] && room.core.presence.detached == 1, "applied here, not sent")
        _ = room.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), shared)
        let led = room.step(.message(update(30), from: Self.ann, sender: "ann"), shared)
        #expect(Self.names(led) == ["state", "publishLed"], "the lease holder's driver: ordered here, heard here at once, and published")
    }

    /// A change the engine could not take is applied here, as while the engine is away.
    @Test func aChangeTheEngineCouldNotTakeIsAppliedHere() {
        var room = RoomMachineTests.room()
        let scroll = ClientMessage.scroll(ScrollUpdate(offset: 20, viewport: 10, content: 100))
        let applied = room.step(.unshared(scroll, from: Self.ann, sender: "ann"), shared)
        #expect(RoomMachineTests.states(applied).map(\.offset) == [20] && RoomMachineTests.saves(applied) == 1)
        #expect(room.core.state?.offset == 20)
    }

    // MARK: Keys

    static func followKey(_ key: String) -> Machine.NewFollowKey {
        Machine.NewFollowKey(record: "record-of-\(key)") { $0 == "record-of-\(key)" }
    }

    /// A presenter's follow key makes the room private at its join; followers in it go; the
    /// same key again changes nothing; a shared room tells every node.
    @Test func aPresentersFollowKeyMakesTheRoomPrivate() {
        var room = Machine(core: RoomCore(name: "r", state: nil, document: nil, presenterKey: Array("k".utf8)))
        let join = room.step(.join(.init(id: Self.ann, role: .presenter, key: .hashed(record: "k", against: "k"), newFollowKey: Self.followKey("f"))), alone)
        #expect(Self.names(join).prefix(3) == ["other", "save", "evict"], "welcome, then the key's record kept, then followers go: \(Self.names(join))")
        #expect(room.core.followKey == "record-of-f")
        let again = room.step(.join(.init(id: Self.bob, role: .presenter, key: .hashed(record: "k", against: "k"), newFollowKey: Self.followKey("f"))), alone)
        #expect(!Self.names(again).contains("evict"), "the same key again")
        let other = room.step(.join(.init(id: Self.carol, role: .presenter, key: .hashed(record: "k", against: "k"), newFollowKey: Self.followKey("g"))), shared)
        #expect(Self.names(other).contains("publishFollowKey") && room.core.followKey == "record-of-g")
        let noProof = Machine(core: RoomCore(name: "s", state: nil, document: nil, presenterKey: Array("k".utf8)))
        var refused = noProof
        #expect(Self.names(refused.step(.join(.init(id: Self.ann, role: .presenter, key: .hashed(record: "wrong", against: "k"), newFollowKey: Self.followKey("f"))), alone)) == ["other"])
        #expect(!refused.core.isPrivate)
    }

    /// A presenter key record a merge put back (a `key` change) reaches a node that fetched the
    /// room keyless: it takes the record, and its presenters, who proved none, go (§7.18); a
    /// follower stays, and the same record again changes nothing.
    @Test func aPresenterKeyPutBackEvictsThePresentersWhoProvedNone() {
        var room = Machine(core: RoomCore(name: "r"))
        _ = room.step(.join(.init(id: Self.ann, role: .presenter, afterClaim: true)), shared)
        #expect(room.core.members[Self.ann] != nil && !room.core.hasPresenterKey, "admitted keyless")
        #expect(Self.names(room.step(.shared(version: 1, .presenterKey("rec")), shared)) == ["save", "evictPresenters"])
        #expect(room.core.presenterKeyText == "rec")
        #expect(room.step(.shared(version: 2, .presenterKey("rec")), shared).isEmpty, "the same record: no change")

        var followed = Machine(core: RoomCore(name: "f"))
        _ = followed.step(.join(.init(id: Self.ann, role: .follower)), shared)
        #expect(Self.names(followed.step(.shared(version: 1, .presenterKey("rec")), shared)) == ["save"], "no presenter here: nobody goes")
        #expect(followed.core.presenterKeyText == "rec")
    }

    /// A key bound on this node may lose to one another node bound first: the follow key given
    /// with it waits for the engine's word, and is set only if this node's key won.
    @Test func aFollowKeyWaitsForTheEnginesKeyBinding() {
        var won = Machine(core: RoomCore(name: "r"))
        let join = won.step(.join(.init(id: Self.ann, role: .presenter, key: .hashed(record: "digest", against: nil), newFollowKey: Self.followKey("f"),
                                                afterClaim: true)), shared)
        #expect(Self.names(join).contains("bindKey") && !Self.names(join).contains("evict") && !won.core.isPrivate)
        #expect(won.followKeyAfterBinding != nil)
        #expect(Self.names(won.step(.keyBound(kept: "digest", digest: "digest"), shared)) == ["save", "publishFollowKey", "evict"])
        #expect(won.core.followKey == "record-of-f" && won.followKeyAfterBinding == nil)

        var lost = Machine(core: RoomCore(name: "r"))
        _ = lost.step(.join(.init(id: Self.ann, role: .presenter, key: .hashed(record: "digest", against: nil), newFollowKey: Self.followKey("f"),
                                                afterClaim: true)), shared)
        #expect(Self.names(lost.step(.keyBound(kept: "other", digest: "digest"), shared)) == ["save", "evictPresenters", "followKeyNotSet"],
                "the record kept is saved; Ann proved another record: she goes (§7.18)")
        #expect(!lost.core.isPrivate && lost.core.presenterKeyText == "other", "every node takes the key the engine kept")
        #expect(lost.step(.keyBound(kept: "other", digest: "digest"), shared).isEmpty, "nothing waits any more")
    }

    /// An older server's presenter key record is replaced by the new one, unless the room took
    /// another meanwhile.
    @Test func anOlderKeyRecordIsReplacedOnlyIfStillHeld() {
        var room = Machine(core: RoomCore(name: "r", state: nil, document: nil, presenterKey: Array("legacy".utf8)))
        #expect(room.step(.keyUpgraded(from: "other", to: "new"), alone).isEmpty)
        #expect(room.core.presenterKeyText == "legacy")
        #expect(Self.names(room.step(.keyUpgraded(from: "legacy", to: "new"), alone)) == ["save"])
        #expect(room.core.presenterKeyText == "new")
    }

    // MARK: Leases and state questions

    /// Every tick of a shared room: this node's driver keeps its lease; a driver that is not
    /// here (its node may have died) is inherited by a presenter here, if there is one.
    @Test func leasesAreRenewedHereOrInherited() {
        var room = RoomMachineTests.room()
        guard case .renewLease(Self.ann)? = room.step(.keepLease, shared).first else { Issue.record("renewed"); return }
        room.core.adopt(driver: Self.carol, name: "Carol")
        guard case .inheritLease(Self.ann, "Ann", Self.carol)? = room.step(.keepLease, shared).first else { Issue.record("inherited"); return }
        _ = room.core.leave(Self.ann)
        #expect(room.step(.keepLease, shared).isEmpty, "no presenter here to inherit it")
        room.core.adopt(driver: nil)
        #expect(room.step(.keepLease, shared).isEmpty, "nobody drives")
    }

    /// A node that does not lead passes its state on at most once per interval, and once more
    /// at its end when asked within it (seed 31067: the node that asked heard nothing); the lease
    /// holder's node orders it again at once, then within the interval passes it on as it is
    /// once and orders once more at the interval's end, however often it is asked.
    @Test func stateQuestionsAreAnsweredAtMostOncePerInterval() {
        let interval = SharedTiming.writeBackNanoseconds
        var elsewhere = RoomMachineTests.room()
        #expect(elsewhere.step(.stateWanted(now: 1), shared).isEmpty, "no state: nothing to say")
        _ = elsewhere.step(.message(RoomMachineTests.scroll(10), from: Self.ann, sender: "ann"), alone)
        #expect(Self.names(elsewhere.step(.stateWanted(now: 1), shared)) == ["passOn"], "not led here: passed on as it is")
        let asked = elsewhere.step(.stateWanted(now: 1 + interval / 2), shared)
        #expect(Self.names(asked) == ["schedule"], "within the interval: answered at its end")
        if case .scheduleOrderAgain(let after)? = asked.first { #expect(after == interval - interval / 2) }
        #expect(elsewhere.step(.stateWanted(now: 1 + interval * 3 / 4), shared).isEmpty, "one answer waits already")
        #expect(Self.names(elsewhere.step(.orderAgain(now: 1 + interval), shared)) == ["passOn"], "the interval's end")
        #expect(Self.names(elsewhere.step(.stateWanted(now: 1 + interval + interval / 2), shared)) == ["schedule"], "its interval")
        #expect(Self.names(elsewhere.step(.stateWanted(now: 1 + 2 * interval + interval / 2), shared)) == ["passOn"])

        var room = RoomMachineTests.room()
        _ = room.step(.shared(version: 1, .driver(Self.ann, name: "Ann")), shared)
        _ = RoomMachineTests.lead(10, from: Self.ann, &room)
        #expect(Self.names(room.step(.stateWanted(now: 1_000), shared)) == ["publishLed"], "ordered again at once")
        let within = room.step(.stateWanted(now: 1_000 + interval / 4), shared)
        #expect(Self.names(within) == ["passOn(keep)", "schedule"])
        guard case .scheduleOrderAgain(let after)? = within.last else { return }
        #expect(after == interval - interval / 4, "at the interval's end")
        for later in 1...100 {  // issue 46.7: one `S` per `Q` here before
            let asked = room.step(.stateWanted(now: 1_000 + interval / 2 + UInt64(later)), shared)
            #expect(asked.isEmpty, "one answer went and one ordering waits already: \(Self.names(asked))")
        }
        let seq = room.core.lastSeq
        let again = room.step(.orderAgain(now: 1_000 + interval), shared)
        #expect(Self.names(again) == ["publishLed"])
        #expect(RoomMachineTests.led(again).first.map { $0.seq > seq } == true && !room.orderAgainScheduled)
        #expect(Self.names(room.step(.stateWanted(now: 1_000 + interval + 1), shared)) == ["passOn(keep)", "schedule"], "a new interval began")
    }
}
