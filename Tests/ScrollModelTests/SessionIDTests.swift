import Testing
@testable import ScrollModel

@Suite("Session ids (PROTOCOL.md §2: 16 lowercase hex digits)")
struct SessionIDTests {
    @Test(arguments: [UInt64(0), 1, 0xA5, 0x0123_4567_89AB_CDEF, .max])
    func theWireFormReadsBackToTheSameID(_ value: UInt64) {
        let text = SessionID(value).description
        #expect(text.utf8.count == 16)
        #expect(text.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(SessionID(text) == SessionID(value))
    }

    @Test func theWireFormIsTheNumberInHex() {
        #expect(SessionID(0x0123_4567_89AB_CDEF).description == "0123456789abcdef")
    }

    @Test(arguments: ["", "D", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "0123456789abcdeg", " 123456789abcdef"])
    func anythingElseIsNotAnID(_ text: String) {
        #expect(SessionID(text) == nil)
    }

    /// The server writes ids into JSON from their numbers; the bytes are those of the wire form.
    @Test(arguments: [UInt64(0), 0xA5, 0x0123_4567_89AB_CDEF, .max])
    func idsWrittenFromTheirNumbersAreTheWireForm(_ value: UInt64) {
        let id = SessionID(value)
        var fromNumber = JSONWriter()
        fromNumber.beginArray(); fromNumber.string(id); fromNumber.string(id); fromNumber.endArray()
        var fromText = JSONWriter()
        fromText.beginArray(); fromText.string(id.description); fromText.string(id.description); fromText.endArray()
        #expect(fromNumber.bytes == fromText.bytes)
        let state = ScrollState(seq: 3, offset: 10, viewport: 20, content: 40, progress: 0.5, direction: .down, anchor: nil, atTop: false, atBottom: false,
                                by: id.description, t: nil, doc: nil)
        for driver in [nil, SessionID(value &+ 1)] {
            let written = ServerMessage.welcome(room: "r", you: id, role: .follower, state: state, driver: driver, driverName: "Ann",
                                                presence: Presence(presenters: 1, followers: 2), document: nil)
            let asText = ServerMessage.welcome(room: "r", you: id.description, role: .follower, state: state, driver: driver?.description,
                                               driverName: "Ann", presence: Presence(presenters: 1, followers: 2), document: nil)
            #expect(written == asText)
            #expect(String(decoding: written, as: UTF8.self).contains("\"you\":\"\(id.description)\""))
        }
    }
}
