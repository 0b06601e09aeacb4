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

    @Test func aSecondServerOnTheSameDirectoryIsRefused() throws {
        let directory = Self.temporaryDirectory()
        let first = try ServerProcess(["--data-dir", directory])
        let second = try run(ServerProcess.binary.path, ["serve", "--port", "0", "--data-dir", directory], timeout: 20)
        #expect(second.status != 0)
        #expect(second.output.contains("in use by another scrollsync server (pid \(first.pid))"), "\(second.output)")
        #expect(first.isRunning)
    }

    /// A key file that is truncated, empty, edited (a trailing newline) or garbage restores the
    /// room locked: presenters are refused with a reason, followers see its last state, the
    /// log and /healthz say so. Never keyless.
    @Test(arguments: ["truncate", "empty", "newline", "garbage", "missing"])
    func aDamagedKeyFileRestoresTheRoomLocked(_ damage: String) throws {
        let directory = Self.temporaryDirectory()
        do {
            let first = try ServerProcess(["--data-dir", directory])
            try Self.populate(first, directory: directory)
            #expect(eventually { FileManager.default.fileExists(atPath: directory + "/kept.key") })
        }
        let keyFile = directory + "/kept.key"
        let original = FileManager.default.contents(atPath: keyFile) ?? Data()
        switch damage {
        case "truncate": try original.prefix(original.count - 10).write(to: URL(fileURLWithPath: keyFile))
        case "empty": try Data().write(to: URL(fileURLWithPath: keyFile))
        case "newline": try (original + Data([10])).write(to: URL(fileURLWithPath: keyFile))
        case "garbage": try Data("not a key at all".utf8).write(to: URL(fileURLWithPath: keyFile))
        default: try FileManager.default.removeItem(atPath: keyFile)
        }
        let second = try ServerProcess(["--data-dir", directory])
        for key in ["s3cret", "anything", ""] {
            let presenter = try RoomConnection(port: second.port, path: "/rooms/kept?role=presenter&key=\(key)")
            #expect(presenter.wait { $0.contains("\"code\":\"unauthorized\"") && $0.contains("locked") }, "\(damage), key \(key): \(presenter.received)")
        }
        let follower = try RoomConnection(port: second.port, path: "/rooms/kept")
        #expect(follower.wait { $0.contains("\"type\":\"welcome\"") && $0.contains("\"offset\":12,") }, "\(follower.received)")
        #expect(second.child.output.contains("room restored locked"), "logged")
        let health = try httpGet("/healthz", port: second.port)
        if damage != "missing" { #expect(health.contains("damaged files"), "\(health)") }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A state whose values no client could send (`offset` -1e308) is not restored, and the
    /// damage is logged and counted; the room keeps its key.
    @Test func restoredValuesAreValidatedAsIncomingMessagesAre() throws {
        let directory = Self.temporaryDirectory()
        do {
            let first = try ServerProcess(["--data-dir", directory])
            try Self.populate(first, directory: directory)
        }
        // Written the way a store from before checksums wrote it (no header): still checked.
        let bad = #"{"type":"state","seq":9,"offset":-1e308,"direction":"none","atTop":true,"atBottom":false,"by":"0000000000000001"}"#
        try Data(bad.utf8).write(to: URL(fileURLWithPath: directory + "/kept.state"))
        let second = try ServerProcess(["--data-dir", directory])
        let follower = try RoomConnection(port: second.port, path: "/rooms/kept")
        #expect(follower.wait { $0.contains("\"type\":\"welcome\"") })
        #expect(follower.received.first { $0.contains("welcome") }?.contains("\"state\":null") == true, "\(follower.received)")
        #expect(second.child.output.contains("stored file damaged"), "\(second.child.output)")
        #expect(try metricValue("scrollsync_store_damaged_files", port: second.port) == 1)
        let intruder = try RoomConnection(port: second.port, path: "/rooms/kept?role=presenter&key=guess")
        #expect(intruder.wait { $0.contains("\"code\":\"unauthorized\"") }, "the key is kept")
        try? FileManager.default.removeItem(atPath: directory)
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

    /// A new room's first scrolls wait for its first ceiling on disk; the newest of them wins
    /// and the states go out in order (none older after a newer one).
    @Test func scrollsWaitingForTheFirstCeilingEndOnTheNewest() throws {
        let directory = Self.temporaryDirectory()
        let server = try ServerProcess(["--data-dir", directory])
        let presenter = try RoomConnection(port: server.port, path: "/rooms/fresh?role=presenter&key=k")
        #expect(presenter.wait { $0.contains("\"type\":\"welcome\"") })
        let follower = try RoomConnection(port: server.port, path: "/rooms/fresh")
        #expect(follower.wait { $0.contains("\"type\":\"welcome\"") })
        for burst in 0..<5 {
            presenter.client.send((1...12).flatMap { maskedFrame(0x1, Array(#"{"type":"scroll","offset":\#(burst * 100 + $0)}"#.utf8)) })
            usleep(20_000)
        }
        #expect(follower.wait { $0.contains("\"offset\":412,") }, "the newest scroll reaches the room: \(follower.received.suffix(3))")
        let offsets = follower.received.filter { $0.contains("\"type\":\"state\"") }.compactMap { $0.firstMatch(of: /"offset":(\d+)/).map { Int($0.1)! } }
        #expect(offsets == offsets.sorted() && offsets.last == 412, "\(offsets)")
        try? FileManager.default.removeItem(atPath: directory)
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
