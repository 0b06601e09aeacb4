import Foundation
import SyncServer
import Testing
import Transport

/// wss on the embedded loop (issue 45.5): the server's TLS runs through the loop's I/O, so a
/// TLS client channel on the same loop talks to it in process, with no socket. What a
/// person hears when TLS cannot work is checked here too; `TLSFailureTests` keeps the same
/// cases end to end, through the command line over real sockets. (A slow follower over wss:
/// `InProcessRoomTests.aFollowerThatDoesNotReadEndsOnTheNewestState`.)
@Suite("wss in process (embedded loop)")
struct InProcessTLSTests {
    static func server(tls: Bool = true) throws -> (Server, EventLoop) {
        try InProcessRoomTests.server {
            if tls {
                $0.tlsCertificateFile = testCertificate.cert
                $0.tlsKeyFile = testCertificate.key
            }
        }
    }

    /// A client that trusts the test certificate (and checks its name, localhost).
    static func trusting() throws -> TLSContext { try TLSContext(clientVerifying: true, caFile: testCertificate.cert) }

    @Test func aFollowerSeesThePresenterOverWSS() throws {
        let (server, loop) = try Self.server()
        defer { server.shutdown() }
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/r?role=presenter&key=k&name=Ann", tls: Self.trusting())
        #expect(presenter.upgraded, "\(presenter.status)")
        #expect(presenter.connection.channel.isTLS)
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/r", tls: Self.trusting())
        #expect(follower.wait { $0.contains(#""type":"welcome""#) && $0.contains(#""driverName":"Ann""#) }, "\(follower.messages)")
        for offset in [10, 20, 30] { presenter.send(#"{"type":"scroll","offset":\#(offset),"viewport":10,"content":100}"#) }
        #expect(follower.wait { $0.contains(#""offset":30,"#) }, "\(follower.messages)")
    }

    /// Plain HTTP to the TLS port hears why in plain HTTP (as nginx answers it).
    @Test func plainHTTPToTheTLSPortIsAnsweredWith400InPlainText() throws {
        let (server, loop) = try Self.server()
        defer { server.shutdown() }
        let answer = ask("GET /rooms/a HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", of: server, on: loop)
        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
        #expect(answer.contains("this server speaks TLS: use wss://"), "\(answer)")
    }

    @Test func aSelfSignedCertificateIsNotTrusted() throws {
        let (server, loop) = try Self.server()
        defer { server.shutdown() }
        let refused = #expect(throws: Failure.self) {
            try InProcessClient(server, loop: loop, path: "/rooms/a", tls: TLSContext(clientVerifying: true))
        }
        #expect(refused?.description.contains("certificate is not trusted: self-signed certificate") == true, "\(String(describing: refused))")
    }

    @Test func aPlainServerIsNotATLSServer() throws {
        let (server, loop) = try Self.server(tls: false)
        defer { server.shutdown() }
        let refused = #expect(throws: Failure.self) { try InProcessClient(server, loop: loop, path: "/rooms/a", tls: Self.trusting()) }
        #expect(refused?.description.contains("not a TLS server") == true, "\(String(describing: refused))")
    }
}
