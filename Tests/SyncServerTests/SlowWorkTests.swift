import Access
import Dispatch
import Foundation
import SyncServer
import Testing
import Transport

/// Issue 45 (the house, small items): a recording's player page and a presenter key's check
/// are slow work done off the loops, each on a worker of its own, so a flood of one never
/// delays the other (they shared one thread: a page request per address could hold a join's
/// key check back). On the embedded loop; the workers' threads are real, and a test holds one
/// with a job that waits for the test's word, not for time.
@Suite("Slow work: pages apart from key checks (embedded loop)")
struct SlowWorkTests {
    /// A job that runs on `worker` until `release`, and as many waiting behind it (from several
    /// addresses) as the worker takes.
    final class Hold {
        private let release = DispatchSemaphore(value: 0)
        private let done = DispatchSemaphore(value: 0)
        private var waiting = 0
        private var released = false

        init(_ worker: FairWorker) {
            let running = DispatchSemaphore(value: 0)
            let (release, done) = (release, done)
            #expect(worker.perform(from: "holder") { running.signal(); release.wait() })
            running.wait()  // running, not waiting: every place behind it is free
            while worker.perform(from: "flood-\(waiting / worker.perAddress)", { done.signal() }) { waiting += 1 }
            #expect(waiting == worker.capacity, "every place taken")
        }

        /// Lets the held job end, and waits until every job behind it has run (at most 30 s
        /// in all: a stopped worker drops them).
        func end() {
            guard !released else { return }
            released = true
            release.signal()
            let deadline = DispatchTime.now() + 30
            for _ in 0..<waiting { _ = done.wait(timeout: deadline) }
        }

        deinit { end() }
    }

    static func page(_ server: Server, _ loop: EventLoop) -> (status: Int, body: String) {
        let answer = ask("GET /rooms/talk/recording HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\nAuthorization: Bearer admin\r\n\r\n",
                         of: server, on: loop)
        let status = Int(answer.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, String(answer.split(separator: "\r\n\r\n", maxSplits: 1).last ?? ""))
    }

    @Test func aPresenterJoinsWhilePagesFillTheirWorker() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.adminToken = "admin" }
        defer { server.shutdown() }
        let presenter = try ServerRecordingTests.recordTalk(server, loop)
        let hold = Hold(server.pages)
        let full = Self.page(server, loop)
        #expect(full.status == 503 && full.body.contains("laying out recordings' pages"), "\(full)")
        // A room of its own: its key is bound by a slow hash, not recognised from before.
        let hashes = server.keyHasher.slowHashes.load(ordering: .relaxed)
        let joining = try InProcessClient(server, loop: loop, path: "/rooms/another?role=presenter&key=k2")
        #expect(joining.wait { $0.contains(#""type":"welcome""#) }, "\(joining.messages)")
        #expect(server.keyHasher.slowHashes.load(ordering: .relaxed) == hashes + 1)
        hold.end()
        let served = Self.page(server, loop)
        #expect(served.status == 200 && served.body.contains("<html"), "the page once the worker is free: \(served.status)")
        _ = presenter
    }

    @Test func aPageIsServedWhileKeyChecksFillTheirWorker() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.adminToken = "admin" }
        defer { server.shutdown() }
        let presenter = try ServerRecordingTests.recordTalk(server, loop)
        let hold = Hold(server.keyHasher.worker)
        let served = Self.page(server, loop)
        #expect(served.status == 200 && served.body.contains("<html"), "\(served.status) \(served.body.prefix(200))")
        let joining = try InProcessClient(server, loop: loop, path: "/rooms/another?role=presenter&key=k2")
        let busy = "server busy checking presenter keys"
        let told = joining.upgraded ? joining.wait { $0.contains(busy) } : joining.waitForAnswer(containing: busy)
        #expect(told, "the key checks keep their own bound: \(joining.answer) \(joining.messages)")
        hold.end()
        _ = presenter
    }

    /// One address takes at most `perAddress` places, all addresses `capacity`; a stopped worker
    /// takes nothing.
    @Test func aWorkerIsBoundedPerAddressAndInAll() {
        let worker = FairWorker(capacity: 5, perAddress: 2)
        let release = DispatchSemaphore(value: 0)
        let running = DispatchSemaphore(value: 0)
        #expect(worker.perform(from: "a") { running.signal(); release.wait() })
        running.wait()
        let taken = ["a", "a", "a", "b", "c", "c", "d"].map { worker.perform(from: $0) {} }
        #expect(taken == [true, true, false, true, true, true, false], "a third from one address, a sixth in all: refused")
        worker.stop()
        release.signal()
        let afterStop = worker.perform(from: "e") {}
        #expect(!afterStop, "stopped")
    }
}
