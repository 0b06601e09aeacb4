import Cluster
import COpenSSL
@testable import RoomKit
import ScrollModel
@testable import SyncServer
import Testing

/// What nodes publish to each other, signed with `redis.secret` (issue 44.4), and how the
/// room's lease confirms a control change.
@Suite("Signed channel messages")
struct ChannelSignerTests {
    let signer = ChannelSigner(secret: String(repeating: "k", count: 32))
    let channel = "scrollsync:{room}"
    let state = #"{"type":"state","seq":42,"offset":5,"direction":"down","atTop":false,"atBottom":false,"by":"0123456789abcdef"}"#

    /// What a script publishes (`Scripts.sign`): the SHA-1 of the key, the version and the seq.
    func scripted(_ key: String, version: String, seq: String, message: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        let text = Array((key + " " + version + " " + seq).utf8)
        text.withUnsafeBytes { raw in digest.withUnsafeMutableBufferPointer { scrollsync_sha1(raw.baseAddress, raw.count, $0.baseAddress) } }
        return Array("!".utf8) + ChannelSigner.hex(digest) + Array((" " + version + " " + message).utf8)
    }

    func verified(_ payload: [UInt8], on channel: String? = nil) -> String? {
        guard case .success(let message) = signer.verify(channel: channel ?? self.channel, payload: payload) else { return nil }
        return String(decoding: message, as: UTF8.self)
    }

    @Test func aMessageANodePublishesItselfIsTakenOnlyAsSignedAndOnItsChannel() {
        let message = Array(("S " + state).utf8)
        let signed = signer.tag(channel: channel, message: message) + message
        #expect(verified(signed) == "S " + state)
        #expect(verified(message) == nil, "unsigned")
        #expect(verified(signed, on: "scrollsync:{other}") == nil, "replayed on another room's channel")
        var tampered = signed
        tampered[tampered.count - 3] = UInt8(ascii: "x")
        #expect(verified(tampered) == nil)
        #expect(verified(ChannelSigner(secret: String(repeating: "o", count: 32)).tag(channel: channel, message: message) + message) == nil,
                "another secret")
    }

    @Test func aScriptsChangeIsBoundToItsVersionAndSeq() {
        let fixed = Array(statePrefix) + Array(state.utf8.dropFirst(statePrefix.count + 2))  // without the seq "42"
        let key = signer.key(channel: channel, message: fixed)
        #expect(verified(scripted(key, version: "7", seq: "42", message: state)) == "7 " + state)
        // Another version, or another seq, under the tag the script made for version 7.
        let tag = Array(scripted(key, version: "7", seq: "42", message: state).prefix(41))
        #expect(verified(tag + Array((" 8 " + state).utf8)) == nil, "replayed under another version")
        #expect(verified(tag + Array((" 7 " + state.replacing("\"seq\":42", with: "\"seq\":43")).utf8)) == nil, "another seq")
        let driver = #"{"type":"driver","driver":"0123456789abcdef","name":"Ann"}"#
        let driverKey = signer.key(channel: channel, message: Array(driver.utf8))
        #expect(verified(scripted(driverKey, version: "3", seq: "", message: driver)) == "3 " + driver)
        #expect(verified(scripted(driverKey, version: "3", seq: "", message: driver.replacing("Ann", with: "Eve"))) == nil)
    }

    @Test func theLeaseConfirmsAControlChangeOrSaysWhyNot() {
        let ann = SessionID(0xA)
        #expect(SharedInput.confirm(driver: ann, name: "Ann", version: 5, lease: ann.description, hashVersion: 5, driverName: "Ann") == nil)
        #expect(SharedInput.confirm(driver: ann, name: "Ann", version: 5, lease: ann.description, hashVersion: 9, driverName: "Ann") == nil,
                "the room went on since")
        #expect(SharedInput.confirm(driver: nil, name: nil, version: 5, lease: "", hashVersion: 5, driverName: "") == nil, "a release")
        let refusals = [
            SharedInput.confirm(driver: ann, name: "Ann", version: 6, lease: ann.description, hashVersion: 5, driverName: "Ann"),
            SharedInput.confirm(driver: SessionID(0xDEAD), name: "Mallory", version: 5, lease: ann.description, hashVersion: 5, driverName: "Ann"),
            SharedInput.confirm(driver: ann, name: "Mallory", version: 5, lease: ann.description, hashVersion: 5, driverName: "Ann"),
            SharedInput.confirm(driver: nil, name: nil, version: 5, lease: ann.description, hashVersion: 5, driverName: "Ann"),
        ]
        #expect(refusals.allSatisfy { $0?.reason == .unconfirmed }, "\(refusals)")
    }
}
