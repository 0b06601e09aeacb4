import RoomKit
import ScrollModel
import Testing

/// What a node reads from Redis passes the checks a client's message passes (issue 26).
@Suite("What nodes read from Redis")
struct SharedInputTests {
    let node = "00000000000000ff"
    let by = "0123456789abcdef"

    func read(_ payload: String) -> Result<SharedInput.Message?, SharedInput.Refusal> {
        SharedInput.message(Array(payload.utf8), node: node, limits: .init())
    }

    func state(_ fields: String, seq: String = "7") -> String {
        #"12 {"type":"state","seq":\#(seq),\#(fields),"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#
    }

    @Test func aValidStateIsTakenWithItsDerivedFieldsComputedNotCopied() throws {
        // The published progress, atTop and atBottom disagree with the numbers: they are recomputed.
        let payload = #"12 {"type":"state","seq":7,"offset":100,"viewport":10,"content":110,"progress":0.01,"direction":"down","atTop":true,"atBottom":false,"by":"\#(by)","anchor":{"id":"intro","fraction":0.25},"t":5}"#
        guard case .success(.change(let version, .state(let state))?) = read(payload) else { Issue.record("\(read(payload))"); return }
        #expect(version == 12)
        #expect(state.seq == 7 && state.offset == 100 && state.progress == 1 && !state.atTop && state.atBottom)
        #expect(state.anchor == Anchor(id: "intro", fraction: 0.25) && state.t == "5" && state.by == by)
    }

    @Test(arguments: [
        #""offset":-1e300"#, #""offset":5,"viewport":-5"#, #""offset":5,"content":1e300"#,
        #""offset":5,"anchor":{"id":"x","fraction":7}"#, #""offset":5,"anchor":{"id":"","fraction":0}"#,
        #""offset":5,"anchor":{"id":"\#(String(repeating: "a", count: 257))","fraction":0}"#, #""offset":5,"t":1.5"#,
        #""offset":5,"doc":"not a fingerprint""#,
    ])
    func statesTheProtocolForbidsAreRefused(_ fields: String) {
        guard case .failure(let refusal) = read(state(fields)) else { Issue.record("accepted: \(fields)"); return }
        #expect(refusal.reason == .invalid)
    }

    @Test(arguments: ["0", "-1", "1.5", "9007199254740993", "999999999999999999999"])
    func aSeqOutsideOneTo2To53IsRefused(_ seq: String) {
        guard case .failure = read(state(#""offset":5"#, seq: seq)) else { Issue.record("accepted seq \(seq)"); return }
    }

    @Test func aStateByAnythingButASessionIDIsRefused() {
        let payload = #"12 {"type":"state","seq":7,"offset":5,"direction":"down","atTop":false,"atBottom":false,"by":"\u001b]52;c;aGk=\u0007"}"#
        guard case .failure(let refusal) = read(payload) else { Issue.record("accepted"); return }
        #expect(refusal.reason == .invalid)
    }

    @Test func aDocumentsFingerprintIsComputedAndItsSizeLimited() {
        let payload = ##"4 {"type":"document","name":"a.md","format":"markdown","doc":"0000000000000000","by":"\##(by)","text":"# A"}"##
        guard case .success(.change(_, .document(let document))?) = read(payload) else { Issue.record("\(read(payload))"); return }
        #expect(document.fingerprint == Fingerprint.of("# A") && document.fingerprint != "0000000000000000")
        var limits = ClientMessage.Limits()
        limits.maxDocumentBytes = 2
        guard case .failure(let refusal) = SharedInput.message(Array(payload.utf8), node: node, limits: limits) else { Issue.record("over the limit"); return }
        #expect(refusal.detail.contains("exceeds 2"))
    }

    @Test(arguments: [
        "P evilnode 1 1 0", "P 0123456789abcdef 9223372036854775807 9223372036854775807 0", "P 0123456789abcdef 1 -3 0",
        "P 0123456789abcdef 1 2 3", "P 0123456789abcdef 1 2", "P 0123456789abcdef 1000001 0 0",
    ])
    func presenceOutsideItsBoundsIsRefused(_ payload: String) {
        guard case .failure = read(payload) else { Issue.record("accepted \(payload)"); return }
    }

    @Test func presenceWithinBoundsIsTakenAndANodesOwnIsIgnored() {
        #expect(read("P 0123456789abcdef 1 20 3") == .success(.presence(node: by, Presence(presenters: 1, followers: 20, detached: 3))))
        #expect(read("P \(node) 1 20 3") == .success(nil))
    }

    @Test(arguments: ["9223372036854775807 {}", "0 {}", "x {}", "garbage", "-5 {}"])
    func aVersionOutsideOneTo2To53OrNoMessageIsMalformed(_ payload: String) {
        guard case .failure(let refusal) = read(payload) else { Issue.record("accepted \(payload)"); return }
        #expect(refusal.reason == .malformed)
    }

    /// `S STATE`: a state the lease holder's node published itself, checked as every state is.
    @Test func aLedStateIsCheckedAsAnyStateAndCarriesNothingElse() {
        let payload = #"S {"type":"state","seq":9,"offset":100,"viewport":10,"content":110,"progress":0.5,"direction":"down","atTop":true,"atBottom":false,"by":"\#(by)"}"#
        guard case .success(.led(let state)?) = read(payload) else { Issue.record("\(read(payload))"); return }
        #expect(state.seq == 9 && state.progress == 1 && state.atBottom && !state.atTop && state.by == by, "derived fields computed")
        guard case .failure(let driver) = read(#"S {"type":"driver","driver":"\#(by)","name":"Ann"}"#) else { Issue.record("a driver as S"); return }
        #expect(driver.reason == .malformed)
        guard case .failure(let bad) = read(#"S {"type":"state","seq":9,"offset":-1e300,"direction":"down","by":"\#(by)"}"#) else {
            Issue.record("an invalid led state"); return
        }
        #expect(bad.reason == .invalid)
        guard case .failure(let forged) = read(#"S {"type":"state","seq":9,"offset":1,"direction":"down","by":"not-a-session"}"#) else {
            Issue.record("a led state by no session"); return
        }
        #expect(forged.reason == .invalid)
    }

    /// `Q NODE`: a node fetched a room and asks its lease holder's node for the newest state.
    @Test func aNodeAskingForTheNewestStateNamesItself() {
        #expect(read("Q \(by)") == .success(.stateWanted(node: by)))
        #expect(read("Q \(node)") == .success(nil), "its own question is not answered by itself")
        for bad in ["Q ", "Q evil\u{1B}[2J", "Q 0123456789abcdefff"] {
            guard case .failure(let refusal) = read(bad) else { Issue.record("accepted \(bad.debugDescription)"); continue }
            #expect(refusal.reason == .malformed)
        }
    }

    @Test func driversMustBeSessionIDsWithNamesWithinTheLimit() {
        #expect(read(#"3 {"type":"driver","driver":"\#(by)","name":"Ann"}"#) == .success(.change(version: 3, .driver(SessionID(by), name: "Ann"))))
        #expect(read(#"3 {"type":"driver","driver":null,"name":null}"#) == .success(.change(version: 3, .driver(nil, name: nil))))
        for bad in [#""driver":"\u001b[2J""#, #""driver":"\#(by)","name":"\#(String(repeating: "n", count: 65))""#] {
            guard case .failure = read(#"3 {"type":"driver",\#(bad)}"#) else { Issue.record("accepted \(bad)"); continue }
        }
    }

    @Test func aSnapshotTakesWhatIsValidAndNamesTheRest() {
        let now = 1_800_000_000_000
        let hash: [String: [UInt8]] = [
            "ver": Array("9".utf8), "seq": Array("4".utf8),
            "suf": Array(#","offset":-5,"direction":"down","atTop":false,"atBottom":false,"by":"\#(by)"}"#.utf8),
            "key": Array("garbage".utf8), "driver": Array(by.utf8), "dname": Array(String(repeating: "x", count: 300).utf8),
        ]
        let nodes = [("00000000000000aa", "1 2 0 \(now)"), ("00000000000000bb", "9223372036854775807 0 0 \(now)"),
                     ("00000000000000cc", "1 1 0 \(now + 10 * 365 * 86_400_000)"), ("evil", "1 1 0 \(now)")]
        let (snapshot, refused) = SharedInput.snapshot(hash: hash, leaseHolder: by, nodes: nodes, node: node, now: now, limits: .init())
        #expect(snapshot.version == 9)
        #expect(snapshot.state == nil && refused.contains("seq/suf"))
        #expect(snapshot.keyDigest == KeyRecord.unreadable, "an unreadable key locks the room, never opens it")
        #expect(snapshot.driver == by && snapshot.driverName == nil && refused.contains("dname"))
        #expect(snapshot.nodes == ["00000000000000aa": Presence(presenters: 1, followers: 2)], "counts from the future or out of bounds are not taken")
    }

    @Test func sumsOfCountsSaturate() {
        let big = Presence(presenters: .max, followers: .max - 1, detached: 0)
        #expect(big.adding(Presence(presenters: 1, followers: 5, detached: 1)) == Presence(presenters: .max, followers: .max, detached: 1))
    }
}
