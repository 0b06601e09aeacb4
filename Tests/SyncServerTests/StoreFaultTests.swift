import Foundation
import Testing

/// What a faulty disk or a damaged file must not do (issue 17.3, 17.4, 17.12): lose a key
/// silently, un-key a room, restore values no client could send, or make `seq` go back.
@Suite("Store faults", .serialized)
struct StoreFaultTests {
    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("scrollsync-store-\(UUID().uuidString)").path
    }

    /// Drives room `kept` with key `s3cret`: a document and a scroll, until the store wrote them.
    static func populate(_ server: ServerProcess, directory: String) throws {
        let presenter = try RoomConnection(port: server.port, path: "/rooms/kept?role=presenter&key=s3cret")
        #expect(presenter.wait { $0.contains("\"type\":\"welcome\"") })
        presenter.send(##"{"type":"document","name":"talk.md","format":"markdown","text":"# Talk"}"##)
        presenter.send(#"{"type":"scroll","offset":12,"viewport":10,"content":100}"#)
        #expect(presenter.wait { $0.contains("\"offset\":12,") })
        #expect(eventually { String(decoding: FileManager.default.contents(atPath: directory + "/kept.state") ?? Data(), as: UTF8.self).contains("\"offset\":12,") })
    }

    /// A full disk: writes fail, are logged and retried; /healthz and /metrics show it; once
    /// space is back everything is written. A `kill -9` then restores the room with its key.
    @Test func aFullDiskIsRetriedVisiblyAndNeverUnkeysARoom() throws {
        let disk = try SmallDisk()
        defer { disk.remove() }
        let server = try ServerProcess(["--data-dir", disk.directory])
        disk.fill()
        let presenter = try RoomConnection(port: server.port, path: "/rooms/kept?role=presenter&key=s3cret")
        #expect(presenter.wait { $0.contains("\"type\":\"welcome\"") })
        presenter.send(##"{"type":"document","name":"talk.md","format":"markdown","text":"# Talk"}"##)
        presenter.send(#"{"type":"scroll","offset":12,"viewport":10,"content":100}"#)
        #expect(eventually { (try? httpGet("/healthz", port: server.port))?.contains("store: failing") == true }, "healthz shows the failure")
        #expect(try httpGet("/healthz", port: server.port).hasPrefix("HTTP/1.1 200 "))
        #expect(try metricValue("scrollsync_store_up", port: server.port) == 0)
        #expect(try metricValue("scrollsync_store_write_failures_total", port: server.port) >= 1)
        #expect(server.child.output.contains("store: write failed"), "logged as an error")
        #expect(presenter.wait { $0.contains("\"offset\":12,") }, "the room goes on while the disk is full")
        disk.free()
        #expect(eventually { (try? httpGet("/healthz", port: server.port))?.contains("store: ok") == true }, "writes again")
        #expect(eventually { FileManager.default.fileExists(atPath: disk.directory + "/kept.key") })
        kill(server.pid, SIGKILL)
        _ = server.child.wait(timeout: 10)
        let second = try ServerProcess(["--data-dir", disk.directory])
        let intruder = try RoomConnection(port: second.port, path: "/rooms/kept?role=presenter&key=anything")
        #expect(intruder.wait { $0.contains("\"code\":\"unauthorized\"") }, "\(intruder.received)")
        let returning = try RoomConnection(port: second.port, path: "/rooms/kept?role=presenter&key=s3cret")
        #expect(returning.wait { $0.contains("\"type\":\"document\"") && $0.contains("# Talk") }, "\(returning.received)")
    }

    /// Issue 17.4: during a 60 Hz drive, 20 `kill -9`s at random moments; a follower that
    /// comes back never sees `seq` go back.
    @Test func seqNeverGoesBackAcrossKillDashNine() throws {
        let directory = Self.temporaryDirectory()
        var highest = 0
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let server = try ServerProcess(["--data-dir", directory])
            let follower = try RoomConnection(port: server.port, path: "/rooms/kept")
            #expect(follower.wait { $0.contains("\"type\":\"welcome\"") })
            let welcomeSeq = follower.received.first { $0.contains("\"type\":\"welcome\"") }.flatMap(seqValue) ?? 0
            if round > 0 { #expect(welcomeSeq > highest, "round \(round): welcome seq \(welcomeSeq) after \(highest)") }
            highest = max(highest, welcomeSeq)
            let presenter = try RoomConnection(port: server.port, path: "/rooms/kept?role=presenter&key=s3cret")
            #expect(presenter.wait { $0.contains("\"type\":\"welcome\"") })
            let scrolls = Int.random(in: 5...40, using: &generator)
            for step in 0..<scrolls {
                presenter.send(#"{"type":"scroll","offset":\#(round * 100 + step)}"#)
                // The first one is seen before the kill, however busy the machine: every round
                // has a state the next welcome must be above.
                if step == 0 { #expect(follower.wait { $0.contains("\"type\":\"state\"") }, "round \(round): the first scroll reached the follower") }
                usleep(16_000)
            }
            kill(server.pid, SIGKILL)
            _ = server.child.wait(timeout: 10)
            _ = follower.wait(timeout: 0.3) { _ in false }  // reads what arrived before the kill
            let seen = follower.received.compactMap { $0.contains("\"type\":\"state\"") ? seqValue($0) : nil }
            #expect(seen == seen.sorted() && Set(seen).count == seen.count, "round \(round): \(seen)")
            if let last = seen.last {
                #expect(last > highest, "round \(round): \(last) after \(highest)")
                highest = last
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A data directory on a 1 MiB tmpfs that can be filled up (or, where mounting is not
/// allowed, a directory that can be taken away): a real failing disk for the store.
final class SmallDisk {
    let directory: String
    private let mounted: Bool

    init() throws {
        directory = StoreFaultTests.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        mounted = (try? run("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", directory], timeout: 10).status) == 0
    }

    /// No more space (ENOSPC), or no directory at all (ENOENT) without a tmpfs.
    func fill() {
        if mounted {
            _ = try? run("dd", ["if=/dev/zero", "of=\(directory)/filler", "bs=4k"], timeout: 10)
        } else {
            _ = rename(directory, directory + ".away")
        }
    }

    func free() {
        if mounted {
            unlink(directory + "/filler")
        } else {
            _ = rename(directory + ".away", directory)
        }
    }

    func remove() {
        if mounted { _ = try? run("umount", ["-l", directory], timeout: 10) }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
