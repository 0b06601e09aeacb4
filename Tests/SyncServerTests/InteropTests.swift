import Foundation
import Testing

/// Real peers that nobody here wrote exchange messages of every length class with /echo.
@Suite("Interoperability with websockets (Python) and ws (Node)")
struct InteropTests {
    static let expectedLines: [String] = [0, 125, 126, 65535, 65536, 16 << 20].flatMap { ["ok text \($0)", "ok binary \($0)"] }

    static let variants: [(tls: Bool, deflate: Bool)] = [(false, false), (false, true), (true, false), (true, true)]

    /// The server in this process (the peers are the processes here).
    func server(tls: Bool) throws -> any ServerNode {
        try InProcessNode {
            if tls {
                $0.tlsCertificateFile = testCertificate.cert
                $0.tlsKeyFile = testCertificate.key
            }
        }
    }

    func check(_ result: (status: Int32, output: String), deflate: Bool, peer: String) {
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(peer) failed:\n\(result.output)")
        #expect(lines.filter { $0.hasPrefix("ok ") } == Self.expectedLines, "\(peer):\n\(result.output)")
        let extensions = lines.first { $0.hasPrefix("extensions:") } ?? ""
        #expect(extensions.contains("permessage-deflate") == deflate, "\(peer) negotiated: \(extensions)")
        #expect(lines.contains("closed 1000"), "\(peer) clean close:\n\(result.output)")
    }

    @Test(arguments: variants.indices)
    func pythonWebsockets(_ index: Int) throws {
        let (tls, deflate) = Self.variants[index]
        let server = try server(tls: tls)
        let script = peersDirectory.appendingPathComponent("echo_websockets.py").path
        let result = try run("python3", [script, server.url + "/echo"] + (deflate ? ["--deflate"] : []))
        check(result, deflate: deflate, peer: "websockets \(server.url) deflate=\(deflate)")
        #expect(server.isRunning)
    }

    /// 16 MiB − 1 random bytes deflated by websockets (memLevel 5: stored blocks grow them by
    /// about 4 %) make a frame larger than the limit, for a message within it: accepted.
    @Test func anIncompressibleMessageJustUnderTheLimitIsEchoedCompressed() throws {
        let server = try server(tls: false)
        let script = peersDirectory.appendingPathComponent("echo_websockets.py").path
        let size = (16 << 20) - 1
        let result = try run("python3", [script, server.url + "/echo", "--deflate", "--random", "--sizes", String(size)])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("ok binary \(size)"), "\(result.output)")
    }

    @Test(arguments: variants.indices)
    func nodeWs(_ index: Int) throws {
        let (tls, deflate) = Self.variants[index]
        let server = try server(tls: tls)
        let script = peersDirectory.appendingPathComponent("echo_ws.js").path
        let result = try run("node", [script, server.url + "/echo"] + (deflate ? ["--deflate"] : []),
                             environment: ["NODE_PATH": "/usr/share/nodejs"])
        check(result, deflate: deflate, peer: "node ws \(server.url) deflate=\(deflate)")
        #expect(server.isRunning)
    }
}
