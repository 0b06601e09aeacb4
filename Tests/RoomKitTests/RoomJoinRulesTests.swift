@testable import RoomKit
import ScrollModel
import Testing

/// The join's rules as machine steps (issue 45): which record a presenter key is hashed
/// against, who claims a room a follower created, whether a join starts a recording, when an
/// older server's key record is replaced, and whether a join may create its room at all.
@Suite("Room machine: joins")
struct RoomJoinRulesTests {
    typealias Machine = RoomMachineTests.Machine
    static let ann = RoomMachineTests.ann
    static let bob = RoomMachineTests.bob
    static let legacy = String(repeating: "ab", count: 32)
    let context = Machine.Context(documents: .init(limit: 100))

    static func presenter(_ id: SessionID = ann, key: GivenKey, authorized: Bool = false) -> Machine.Event {
        .join(.init(id: id, role: .presenter, key: key, authorized: authorized, address: "10.0.0.1"))
    }

    static func hashedAgainst(_ effects: [Machine.Effect]) -> String?? {
        guard effects.count == 1, case .hashKey(let against) = effects[0] else { return nil }
        return .some(against)
    }

    static func welcomed(_ effects: [Machine.Effect]) -> Bool { if case .welcome? = effects.first { true } else { false } }

    static func settled(_ effects: [Machine.Effect]) -> [String] {
        effects.compactMap { if case .settleCreation(let address) = $0 { address } else { nil } }
    }

    static func upgrades(_ effects: [Machine.Effect]) -> [String] {
        effects.compactMap { if case .upgradeKey(let from) = $0 { from } else { nil } }
    }

    static func recordings(_ effects: [Machine.Effect]) -> [String] {
        effects.compactMap { if case .record(let address) = $0 { address } else { nil } }
    }

    static func forgets(_ effects: [Machine.Effect]) -> Bool { effects.contains { if case .forgetUnclaimed = $0 { true } else { false } } }

    @Test func aPresenterKeyIsHashedAgainstTheRoomsRecordBeforeItCounts() {
        var room = Machine(core: RoomCore(name: "r"))
        #expect(Self.hashedAgainst(room.step(Self.presenter(key: .unhashed), context)) == .some(nil), "no record yet: a fresh salt, to bind it")
        #expect(room.core.members.isEmpty, "nobody joins before the key is hashed")
        #expect(Self.welcomed(room.step(Self.presenter(key: .hashed(record: "r1", against: nil)), context)))
        #expect(room.core.presenterKeyText == "r1")
        let stale = room.step(Self.presenter(Self.bob, key: .hashed(record: "r9", against: nil)), context)
        #expect(Self.hashedAgainst(stale) == .some("r1"), "a proof made against a record the room no longer holds is made again")
        let wrong = room.step(Self.presenter(Self.bob, key: .hashed(record: "r9", against: "r1")), context)
        guard case .joinRefused(_, keyFailed: true)? = wrong.first else { Issue.record("\(wrong)"); return }
    }

    @Test func aKeyIsNotHashedWhereItIsNotAsked() {
        var room = Machine(core: RoomCore(name: "r"))
        _ = room.step(Self.presenter(key: .hashed(record: "r1", against: nil)), context)
        #expect(Self.welcomed(room.step(Self.presenter(Self.bob, key: .unhashed, authorized: true), context)), "a token admitted it")
        let follower = room.step(.join(.init(id: SessionID(0xC), role: .follower, key: .unhashed)), context)
        #expect(Self.welcomed(follower), "a follower's presenter key is not looked at")
        var locked = Machine(core: RoomCore(name: "l", state: nil, document: nil, presenterKey: nil, locked: true))
        let refused = locked.step(Self.presenter(key: .unhashed), context)
        guard case .joinRefused(_, keyFailed: false)? = refused.first else { Issue.record("a locked room refuses at once: \(refused)"); return }
    }

    @Test func aProvenKeyReplacesAnOlderServersRecord() {
        var room = Machine(core: RoomCore(name: "r", state: nil, document: nil, presenterKey: Array(Self.legacy.utf8)))
        let joined = room.step(Self.presenter(key: .hashed(record: Self.legacy, against: Self.legacy)), context)
        #expect(Self.welcomed(joined) && Self.upgrades(joined) == [Self.legacy])
        #expect(Self.upgrades(room.step(Self.presenter(Self.bob, key: .unhashed, authorized: true), context)).isEmpty,
                "a token proves no key: the record stays")
        #expect(room.step(.keyUpgraded(from: Self.legacy, to: "pbkdf2-new"), context).count == 1)
        #expect(room.core.presenterKeyText == "pbkdf2-new")
        let again = room.step(Self.presenter(SessionID(0xC), key: .hashed(record: "pbkdf2-new", against: "pbkdf2-new")), context)
        #expect(Self.welcomed(again) && Self.upgrades(again).isEmpty, "a current record is not hashed again")
    }

    @Test func aRoomAFollowerCreatedIsClaimedByTheFirstPresenter() {
        var room = Machine(core: RoomCore(name: "r"), unclaimedBy: "10.0.0.9")
        let follower = room.step(.join(.init(id: Self.bob, role: .follower)), context)
        #expect(Self.welcomed(follower) && Self.settled(follower).isEmpty && room.creator == "10.0.0.9")
        #expect(Self.settled(room.step(Self.presenter(key: nil), context)) == ["10.0.0.9"])
        #expect(room.creator == nil)
        #expect(Self.settled(room.step(Self.presenter(SessionID(0xC), key: nil), context)).isEmpty, "settled once")
        #expect(room.step(.forgotten, context).isEmpty, "a claimed room settles nothing when it goes")
    }

    @Test func anUnclaimedRoomGoesWithItsLastMember() {
        var room = Machine(core: RoomCore(name: "r"), unclaimedBy: "10.0.0.9")
        _ = room.step(.join(.init(id: Self.ann, role: .follower)), context)
        _ = room.step(.join(.init(id: Self.bob, role: .follower)), context)
        #expect(!Self.forgets(room.step(.leave(Self.ann), context)), "a member is still in it")
        #expect(Self.forgets(room.step(.leave(Self.bob), context)))
        #expect(Self.settled(room.step(.forgotten, context)) == ["10.0.0.9"], "forgotten: the address holds it no more")
        #expect(room.step(.forgotten, context).isEmpty, "once")
        var claimed = Machine(core: RoomCore(name: "c"))
        _ = claimed.step(Self.presenter(key: nil), context)
        #expect(!Self.forgets(claimed.step(.leave(Self.ann), context)), "a claimed room stays until it is idle")
    }

    @Test func aRoomPresentedOnAnotherNodeIsClaimed() {
        var room = Machine(core: RoomCore(name: "r"), unclaimedBy: "10.0.0.9")
        #expect(Self.settled(room.step(.snapshot(RoomSnapshot()), context)).isEmpty, "an empty room elsewhere claims nothing")
        var snapshot = RoomSnapshot()
        snapshot.keyDigest = "pbkdf2-elsewhere"
        #expect(Self.settled(room.step(.snapshot(snapshot), context)) == ["10.0.0.9"])
        #expect(room.creator == nil)
    }

    /// Divergence 4 (docs/cluster.md): a room a follower created here and that is driven only
    /// from another node is claimed here too, by whichever change shows it driven first (a
    /// driver change, a led state, a document), not only by a snapshot or a presenter here.
    @Test(arguments: ["driver", "led", "document", "scroll script"])
    func aRoomDrivenFromAnotherNodeIsClaimedHere(_ how: String) {
        var room = Machine(core: RoomCore(name: "r"), unclaimedBy: "10.0.0.9")
        let shared = Machine.Context(documents: .init(limit: 100), shared: true)
        _ = room.step(.snapshot(RoomSnapshot()), shared)
        #expect(Self.settled(room.step(.join(.init(id: Self.bob, role: .follower)), shared)).isEmpty && room.creator != nil)
        #expect(Self.settled(room.step(.shared(version: 1, .access(followKey: nil)), shared)).isEmpty, "a change that drives nothing")
        let state = ScrollState(seq: 1, offset: 5, viewport: 10, content: 100, progress: 0.05, direction: .down, anchor: nil,
                                atTop: false, atBottom: false, by: Self.ann.description, t: nil, doc: nil)
        let effects = switch how {
        case "driver": room.step(.shared(version: 2, .driver(Self.ann, name: "Ann")), shared)
        case "led": room.step(.led(state), shared)
        case "document": room.step(.shared(version: 2, .document(SharedDocument(name: "d", format: .text, text: "x", by: Self.ann.description))), shared)
        default: room.step(.shared(version: 2, .state(state)), shared)
        }
        #expect(Self.settled(effects) == ["10.0.0.9"], "\(how): claimed on this node too")
        #expect(room.creator == nil)
        #expect(!Self.forgets(room.step(.leave(Self.bob), shared)), "a claimed room stays until it is idle")
        #expect(Self.settled(room.step(.forgotten, shared)).isEmpty, "settled once")
    }

    /// What claims a room a follower created (`RoomCore.isDriven`, read by tags): any one of a
    /// state, a driver, a document or a presenter key; an empty room is not driven.
    @Test(arguments: ["nothing", "state", "driver", "document", "key"])
    func aRoomIsDrivenByAnyOneOfFourThings(_ what: String) {
        let state = ScrollState(seq: 1, offset: 5, viewport: 10, content: 100, progress: 0.05, direction: .down, anchor: nil,
                                atTop: false, atBottom: false, by: Self.ann.description, t: nil, doc: nil)
        var core = RoomCore(name: "r", state: what == "state" ? state : nil,
                            document: what == "document" ? SharedDocument(name: "d", format: .text, text: "x", by: "a") : nil,
                            presenterKey: what == "key" ? Array("r1".utf8) : nil)
        if what == "driver" { core.adopt(driver: Self.ann, name: "Ann") }
        #expect(core.isDriven == (what != "nothing"), "\(what)")
    }

    @Test func aJoinStartsTheRecordingItAsksFor() {
        var room = Machine(core: RoomCore(name: "r"))
        let follower = room.step(.join(.init(id: Self.bob, role: .follower, address: "f", asksToRecord: true)), context)
        #expect(Self.recordings(follower).isEmpty, "only a presenter asks for a recording")
        let asked = room.step(.join(.init(id: Self.ann, role: .presenter, address: "p", asksToRecord: true)), context)
        #expect(Self.recordings(asked) == ["p"])
        let every = room.step(.join(.init(id: SessionID(0xC), role: .follower, address: "f2", recordsEveryRoom: true)), context)
        #expect(Self.recordings(every) == ["f2"], "rooms.record: the first member's join starts it, paid by its address")
        var keyed = Machine(core: RoomCore(name: "k", state: nil, document: nil, presenterKey: Array("r1".utf8)))
        let refused = keyed.step(.join(.init(id: Self.ann, role: .presenter, key: .hashed(record: "r2", against: "r1"), asksToRecord: true)), context)
        #expect(Self.recordings(refused).isEmpty, "a refused join records nothing")
    }

    @Test func aJoinCreatesItsRoomWithinTheLimits() {
        var counted: [Bool] = []
        let full = RoomCreation.decide(role: .follower, address: "a", roomsHeld: 5, maxRooms: 5) { counted.append($0); return nil }
        guard case .refused(let error, .rooms) = full else { Issue.record("\(full)"); return }
        #expect(error.code == .rateLimited && counted.isEmpty, "at the room limit nothing is counted against the address")
        #expect(RoomCreation.decide(role: .follower, address: "a", roomsHeld: 0, maxRooms: 5) { counted.append($0); return nil }
                == .create(unclaimedBy: "a"))
        #expect(RoomCreation.decide(role: .presenter, address: "a", roomsHeld: 0, maxRooms: 5) { counted.append($0); return nil }
                == .create(unclaimedBy: nil))
        #expect(counted == [false, true], "a presenter's room is claimed from the start")
        let limited = RoomCreation.decide(role: .follower, address: "a", roomsHeld: 0, maxRooms: 5) { _ in ("a made too many", 7) }
        guard case .refused(let refusal, .creations) = limited else { Issue.record("\(limited)"); return }
        #expect(refusal.message == "a made too many; try again in 7 s")
    }
}
