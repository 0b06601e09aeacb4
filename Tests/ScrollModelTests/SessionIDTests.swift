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
}
