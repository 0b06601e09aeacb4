import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Signals reach `serve` on one thread only (issue 44): every thread blocks HUP, INT and TERM,
/// the main thread takes them with sigwait, so one that arrives while a reload runs waits for
/// it instead of meeting a thread whose default action ends the process. These need a process.
@Suite("Signals during a reload")
struct SignalTests {
    /// HUP, INT and TERM as bits of a `/proc` signal mask (bit n-1 for signal n).
    static let serveSignals: UInt64 = 1 << (UInt64(SIGHUP) - 1) | 1 << (UInt64(SIGINT) - 1) | 1 << (UInt64(SIGTERM) - 1)

    /// Each thread of `pid` with its blocked-signal mask (`SigBlk` of /proc/PID/task/TID/status).
    static func blockedMasks(of pid: Int32) throws -> [String: UInt64] {
        var masks = [String: UInt64]()
        for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            let status = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            let line = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") } ?? ""
            masks[task] = UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
        }
        return masks
    }

    /// The main thread waits in sigwait (while it waits, /proc shows the signals it waits for
    /// as not blocked); every other thread blocks them.
    @Test func everyThreadButTheWaitingOneBlocksHangupInterruptAndTerminate() throws {
        let directory = try temporaryDirectory("signal-mask")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ServerProcess(["--loops", "2", "--data-dir", directory])
        let presenter = try RawClient(port: server.port)  // a room and its key: the store's and the key hasher's threads
        #expect(Self.join(presenter, "/rooms/masks?role=presenter&key=k"))
        #expect(eventually { Self.mainThreadSyscall(server.pid) == Self.sigtimedwaitNumber }, "the main thread waits for signals")
        var masks = try Self.blockedMasks(of: server.pid)
        masks["\(server.pid)"] = nil
        #expect(masks.count >= 3, "two loops and the log writer at least: \(masks)")
        let open = masks.filter { $0.value & Self.serveSignals != Self.serveSignals }
        #expect(open.isEmpty, "threads that would take HUP/INT/TERM and die of it: \(open.map { "\($0.key): \(String($0.value, radix: 16))" })")
    }

    @Test(.timeLimit(.minutes(1))) func aStormOfHangupsLeavesTheServerServing() throws {
        let server = try ServerProcess()
        func reloads() -> Int { server.child.lines.filter { $0.contains(" reloaded ") }.count }
        for round in 1...20 {
            for _ in 0..<50 { kill(server.pid, SIGHUP) }  // back to back: most arrive while a reload runs
            #expect(server.child.waitForOutput(timeout: 20) { _ in reloads() >= round || !server.isRunning }, "round \(round)")
            guard server.isRunning else { break }
        }
        #expect(server.isRunning, "status \(server.child.status ?? -1): \(server.child.output.suffix(500))")
        let client = try RawClient(port: server.port)
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(String(decoding: client.receive(atLeast: 12, timeout: 10), as: UTF8.self).hasPrefix("HTTP/1.1 200 "), "it still serves")
        server.child.signal(SIGTERM)
        #expect(server.child.wait(timeout: 20) == 0)
    }

    /// The reload is held where the main thread tells systemd RELOADING=1: the notify socket's
    /// queue is full, so that send waits until the test reads. HUP and TERM sent meanwhile are
    /// taken after it: one more reload, then the drain (close 1001, the store flushed), exit 0.
    @Test(.timeLimit(.minutes(1))) func hangupThenTerminateWhileAReloadIsHeldDrainsAndExitsZero() throws {
        let directory = try temporaryDirectory("signal-drain")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notify = try ServiceTests.NotifySocket()
        let server = try ServerProcess(["--data-dir", directory, "--shutdown-grace", "20"], environment: ["NOTIFY_SOCKET": notify.path])
        #expect(notify.next()?.contains("READY=1") == true)
        let presenter = try RawClient(port: server.port), follower = try RawClient(port: server.port)
        #expect(Self.join(presenter, "/rooms/held?role=presenter&key=k"))
        #expect(Self.join(follower, "/rooms/held"))

        let junk = try Self.fill(notify.path)
        #expect(junk > 0)
        server.child.signal(SIGHUP)
        #expect(eventually(timeout: 20) { Self.mainThreadSyscall(server.pid) == Self.sendtoNumber }, "the reload waits on the full notify socket")
        presenter.send(maskedFrame(0x1, Array(#"{"type":"scroll","offset":42}"#.utf8)))  // the loops carry on meanwhile
        #expect(follower.waitForText { $0.contains(#""offset":42"#) })
        server.child.signal(SIGHUP)
        server.child.signal(SIGTERM)

        for _ in 0..<junk { _ = notify.next() }
        var told = [String]()
        while let message = notify.next() {
            told.append(message.split(separator: "\n").first.map(String.init) ?? "")
            if message.hasPrefix("STOPPING=1") { break }
        }
        #expect(told.first == "RELOADING=1" && told.last == "STOPPING=1", "\(told)")
        #expect(told.contains("READY=1"), "the held reload ended: \(told)")
        for client in [presenter, follower] {
            let received = client.read { closeCode(in: $0) != nil }
            #expect(received.flatMap(closeCode) == 1001)
            client.send(maskedFrame(0x8, [0x03, 0xE9]))
        }
        #expect(server.child.wait(timeout: 30) == 0, "\(server.child.output.suffix(800))")
        #expect(server.child.exitedNormally)
        let lines = server.child.lines
        let reloaded = lines.firstIndex { $0.contains(" reloaded ") }, shutting = lines.firstIndex { $0.contains("shutting down") }
        #expect(reloaded != nil && shutting != nil && reloaded! < shutting!, "the reload ends before the drain begins")

        let restarted = try ServerProcess(["--data-dir", directory])
        let late = try RawClient(port: restarted.port)
        let head = late.upgrade(path: "/rooms/held")
        #expect(head.hasPrefix("HTTP/1.1 101 "))
        #expect(head.contains(#""offset":42"#) || late.waitForText { $0.contains(#""offset":42"#) }, "the store kept the last state")
    }

    /// Sends one-byte datagrams to the socket at `path` until its queue is full; how many.
    static func fill(_ path: String) throws -> Int {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        var count = 0
        while count < 100_000 {
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, "x", 1, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard sent == 1 else { break }
            count += 1
        }
        guard errno == EAGAIN else { throw Failure("filling \(path): errno \(errno)") }
        return count
    }

    /// The number of the system call the process's main thread is in (/proc/PID/syscall).
    static func mainThreadSyscall(_ pid: Int32) -> String? {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8)) ?? ""
        return text.split(separator: " ").first.map(String.init)
    }

    #if arch(x86_64)
    static let sendtoNumber = "44", sigtimedwaitNumber = "128"
    #elseif arch(arm64)
    static let sendtoNumber = "206", sigtimedwaitNumber = "137"
    #endif

    /// Upgrades `client` to a WebSocket on `path` and waits for its welcome.
    static func join(_ client: RawClient, _ path: String) -> Bool {
        let head = client.upgrade(path: path)  // may hold the first frames too
        guard head.hasPrefix("HTTP/1.1 101 ") else { return false }
        return head.contains(#""type":"welcome""#) || client.waitForText { $0.contains(#""type":"welcome""#) }
    }
}

/// A fresh directory under the temporary directory.
func temporaryDirectory(_ prefix: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

extension RawClient {
    /// Reads until what arrived satisfies `condition`: what arrived, or nil after `timeout` seconds.
    func read(timeout: TimeInterval = 10, until condition: ([UInt8]) -> Bool) -> [UInt8]? {
        var received = [UInt8]()
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(received) {
            guard Date() < deadline else { return nil }
            received += receive(atLeast: 1, timeout: 0.5)
        }
        return received
    }

    /// Reads until what arrived, as text, satisfies `condition` (at most `timeout` seconds).
    func waitForText(timeout: TimeInterval = 10, _ condition: (String) -> Bool) -> Bool {
        read(timeout: timeout) { condition(String(decoding: $0, as: UTF8.self)) } != nil
    }
}
