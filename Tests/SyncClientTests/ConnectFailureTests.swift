import Dispatch
import Synchronization
import Testing
import Transport
@testable import SyncClient

/// A connection that fails before it starts is told after `connect` returns, so its caller
/// knows the client it is told about (RoomClient drops events from a client it does not hold,
/// and would keep a dead one and never retry).
@Suite("Connect failures")
struct ConnectFailureTests {
    @Test func aConnectionThatFailsAtOnceIsToldAfterConnectReturns() throws {
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.shutdown() }
        let url = try #require(WebSocketURL("ws://127.0.0.1:9/echo"))
        // 192.0.2.1 (TEST-NET-1) is no address of this machine: bind fails at once.
        let source = try SocketAddress.resolve(host: "192.0.2.1", port: 0)
        let address = try SocketAddress.resolve(host: "127.0.0.1", port: 9)
        let outcome = Mutex<(returned: Bool, closedAfterReturn: Bool?, error: String?)>((false, nil, nil))
        let done = DispatchSemaphore(value: 0)
        let loop = group.loops[0]
        loop.execute {
            nonisolated(unsafe) var client: WebSocketClient?
            client = WebSocketClient.connect(url, address: address, on: loop, tls: nil, source: source) { told, event in
                guard case .closed(_, _, let error) = event else { return }
                outcome.withLock { $0.closedAfterReturn = $0.returned && client === told; $0.error = error }
                done.signal()
            }
            outcome.withLock { $0.returned = true }
        }
        #expect(done.wait(timeout: .now() + 15) == .success, "the failed connection was never told")
        let seen = outcome.withLock { $0 }
        #expect(seen.closedAfterReturn == true)
        #expect(seen.error?.contains("bind") == true, "the error names the failed call: \(seen.error ?? "none")")
    }
}
