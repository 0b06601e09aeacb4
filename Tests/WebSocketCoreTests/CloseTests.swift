import Testing
@testable import WebSocketCore

@Suite("RFC 6455 §7 closing handshake")
struct CloseTests {
    @Test func peerCloseIsEchoedAndEndsTheConnection() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x8, [0x0B, 0xB8] + bytes("app"))) == [.closed(3000, "app")])
        #expect(server.state == .closed)
        #expect(server.takeOutput() == [0x88, 0x02, 0x0B, 0xB8])
    }

    @Test func emptyCloseIsAnsweredWithEmptyClose() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x8, [])) == [.closed(1005, "")])
        #expect(server.takeOutput() == [0x88, 0x00])
    }

    @Test func serverInitiatedCloseWaitsForTheReply() {
        let server = WebSocketConnection(role: .server)
        server.close(code: .goingAway, reason: "restart")
        #expect(server.state == .closing)
        #expect(server.takeOutput() == [0x88, 0x09, 0x03, 0xE9] + bytes("restart"))
        #expect(server.send(text: "late") == false)
        // Data still in flight from the peer is dropped; its close ends the handshake.
        #expect(server.feed(clientFrame(0x1, bytes("in flight")) + clientFrame(0x8, [0x03, 0xE9])) == [.closed(1001, "")])
        #expect(server.state == .closed)
        #expect(server.takeOutput().isEmpty)
    }

    @Test func invalidUTF8InReasonCloses1007() {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x8, [0x03, 0xE8, 0xC0, 0x80])) == [.failed(1007)])
    }

    @Test(arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999])
    func validCodesAreAccepted(_ code: Int) {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x8, [UInt8(code >> 8), UInt8(code & 0xFF)])) == [.closed(UInt16(code), "")])
    }

    @Test(arguments: [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535])
    func invalidCodesAreRefused(_ code: Int) {
        let server = WebSocketConnection(role: .server)
        #expect(server.feed(clientFrame(0x8, [UInt8(code >> 8), UInt8(code & 0xFF)])) == [.failed(1002)])
    }

    @Test func longReasonIsCutAtACharacterBoundary() {
        let payload = FrameEncoder.closePayload(code: .normal, reason: String(repeating: "é", count: 100))
        #expect(payload.count <= 125)
        #expect(UTF8Validator.isValid(Array(payload[2...])))
    }
}
