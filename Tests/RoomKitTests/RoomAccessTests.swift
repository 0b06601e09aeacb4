import RoomKit
import ScrollModel
import Testing

/// Issue 44: who may make a room private, and the one comparison of secrets.
@Suite("Room access rules and secret comparison")
struct RoomAccessTests {
    static let ann = SessionID(1), bo = SessionID(2), cy = SessionID(3)

    static func refusal<T>(_ result: Result<T, ProtocolError>) -> ProtocolError? {
        if case .failure(let error) = result { error } else { nil }
    }

    /// Lengths that differ by 256 (or a multiple) once folded into 8 bits compared equal.
    @Test(arguments: [0, 1, 31, 32, 33, 255, 256, 257, 512, 4096])
    func secretsOfOtherLengthsDiffer(extra: Int) {
        let secret = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
        let longer = secret + [UInt8](repeating: 0, count: extra)
        #expect(ConstantTime.equal(secret, longer) == (extra == 0))
        #expect(ConstantTime.equal(longer, secret) == (extra == 0))
        #expect(ConstantTime.equal([UInt8](), [UInt8](repeating: 0, count: extra)) == (extra == 0))
    }

    @Test func secretsCompareByEveryByteInAnyCollection() {
        #expect(ConstantTime.equal("open-sesame".utf8, Array("open-sesame".utf8)))
        #expect(ConstantTime.equal("".utf8, [UInt8]()))
        for index in 0..<11 {
            var other = Array("open-sesame".utf8)
            other[index] ^= 1
            #expect(!ConstantTime.equal("open-sesame".utf8, other), "byte \(index)")
        }
        #expect(!ConstantTime.equal("open-sesame".utf8, "open-sesame".utf8.dropLast()))
    }

    /// The presenter key with 256 NUL bytes more was the same key to the room.
    @Test func aPresenterKeyWith256MoreBytesIsAnotherKey() {
        var room = RoomCore(name: "r")
        #expect(Self.refusal(room.join(Self.ann, role: .presenter, name: nil, key: "k")) == nil)
        let padded = "k" + String(repeating: "\u{0}", count: 256)
        #expect(Self.refusal(room.join(Self.bo, role: .presenter, name: nil, key: padded))?.code == .unauthorized)
        #expect(Self.refusal(room.join(Self.cy, role: .presenter, name: nil, key: "k")) == nil)
    }

    @Test func aFollowKeyFromAPresenterWithoutAKeyIsRefusedWithTheReason() {
        var room = RoomCore(name: "r")
        let refused = Self.refusal(room.join(Self.ann, role: .presenter, name: nil, key: nil, setsFollowKey: true))
        #expect(refused?.code == .unauthorized && refused?.message.contains("presenter key") == true, "\(String(describing: refused))")
        #expect(room.isEmpty && !room.hasPresenterKey)
        // A presenter that binds its key (the room's first) proves it; one that joins a
        // keyless room beside another presenter does not.
        #expect(Self.refusal(room.join(Self.ann, role: .presenter, name: nil, key: nil)) == nil)
        #expect(Self.refusal(room.join(Self.bo, role: .presenter, name: nil, key: "mine", setsFollowKey: true))?.code == .unauthorized)
        var fresh = RoomCore(name: "s")
        #expect(Self.refusal(fresh.join(Self.ann, role: .presenter, name: nil, key: "k", setsFollowKey: true)) == nil)
        #expect(fresh.hasPresenterKey)
        #expect(Self.refusal(fresh.join(Self.bo, role: .presenter, name: nil, key: "k", setsFollowKey: true)) == nil)
        // A token proves it too.
        var tokened = RoomCore(name: "t")
        #expect(Self.refusal(tokened.join(Self.ann, role: .presenter, name: nil, key: nil, authorized: true, setsFollowKey: true)) == nil)
    }

    /// A private room without a presenter key (a token presenter made it private) takes no
    /// presenter without a token: not one without a key, not one binding a key of its own.
    @Test func aPrivateRoomWithoutAPresenterKeyTakesOnlyTokenPresenters() {
        var room = RoomCore(name: "r")
        room.adopt(followKey: "record")
        for key in [nil, "", "guess"] as [String?] {
            let refused = Self.refusal(room.join(Self.bo, role: .presenter, name: nil, key: key))
            #expect(refused?.code == .unauthorized && refused?.message.contains("private") == true, "\(String(describing: key))")
        }
        #expect(!room.hasPresenterKey && room.isEmpty)
        #expect(Self.refusal(room.join(Self.ann, role: .presenter, name: nil, key: nil, authorized: true)) == nil)
    }
}
