import Access
import Cluster
import Dispatch
import Logging
import Operations
import RoomKit
import Synchronization
import Testing
import Transport
@testable import SyncServer

/// The claim race's paths through the hub (docs/cluster.md §7.3): a shared room's first
/// presenter claims control before it joins; when another node bound the room's presenter key
/// in the same instant, its key is checked again after the claim won. If its join ends there
/// (the check refused as busy or rate-limited, or the presenter left while its key was being
/// hashed), its node gives the lease back at once. Before, the lease stayed with a session in
/// no room until it expired (5 s), and nobody else could drive. One node on the embedded loop
/// and `SimRedis` (virtual time); "another node" is a key put into the room's hash.
@Suite("Claim race: a lease given back when the join ends after the claim")
struct ClaimRaceTests {
    static let room = "race"

    /// The node, its Redis and their loop.
    final class Race {
        let loop: EventLoop
        let redis: SimRedis
        let server: Server

        init(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws {
            loop = try EventLoop.embedded(startingAt: ClusterSimulation.start)
            redis = SimRedis(loop: loop, seed: 46)
            var configuration = ServerConfiguration()
            configuration.dataDirectory = nil
            configuration.redisURL = "redis://simulated.invalid:6379"
            adjust(&configuration)
            server = try Server(configuration: configuration, logger: Logger(label: "race") { _ in SwiftLogNoOpLogHandler() },
                                embedded: loop, redisLinks: redis.links(node: 0), sessionIDs: SessionIDSource(seed: 46))
            loop.advance(to: loop.now + 50_000_000)
        }

        deinit { server.shutdown() }

        var lease: [UInt8]? { redis.get(RedisRoomEngine.roomKey(ClaimRaceTests.room) + ":lease") }

        /// Steps the loop, moving virtual time 0.2 ms a turn (Redis's delays) and waiting for other
        /// threads' tasks (the key hasher's), until `condition` holds (false after 30 s real time).
        /// (At most `virtual` nanoseconds of virtual time pass.)
        func run(virtual: UInt64 = 1_000_000_000, until condition: () -> Bool) -> Bool {
            let deadline = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
            let end = loop.now + virtual
            while !condition() {
                guard DispatchTime.now().uptimeNanoseconds < deadline, loop.now < end else { return false }
                loop.advance(until: condition, timeout: 0.002)
                if !condition() { loop.advance(to: loop.now + 200_000) }
            }
            return true
        }

        /// A follower holds the room (fetched, keyless here); then another node binds its key, and
        /// a presenter with another key joins: its first check binds nothing (the hash keeps the
        /// other), its claim wins, and its key is checked again against the other's record.
        /// Returns the presenter once its claim is in Redis.
        func presenterWhoseClaimWon() throws -> InProcessClient {
            let follower = try InProcessClient(server, loop: loop, path: "/rooms/\(ClaimRaceTests.room)", from: "10.0.0.1")
            #expect(run { follower.pump(); return follower.messages.contains { $0.contains(#""type":"welcome""#) } })
            redis.hset(RedisRoomEngine.roomKey(ClaimRaceTests.room), "key", PresenterKey.record("theirs", matching: nil, room: ClaimRaceTests.room))
            let presenter = try InProcessClient(server, loop: loop, path: "/rooms/\(ClaimRaceTests.room)?role=presenter&name=P&key=mine", from: "10.0.0.2")
            #expect(run(virtual: 4_000_000_000) { lease != nil }, "the presenter's claim won")
            return presenter
        }

        /// Waits for the presenter's join to end refused (`text`), then for the lease to go: within
        /// a second of virtual time, well before it would expire (5 s).
        func expectLeaseGivenBack(_ presenter: InProcessClient, refusedWith text: String?) {
            if let text {
                #expect(run { presenter.pump(); return presenter.messages.contains { $0.contains(text) } }, "\(presenter.messages)")
            }
            #expect(run { lease == nil }, "the lease is still held by a session in no room: \(lease.map { String(decoding: $0, as: UTF8.self) } ?? "")")
        }
    }

    @Test func aKeyCheckRefusedAsBusyAfterTheClaimGivesTheLeaseBack() throws {
        let race = try Race()
        let presenter = try race.presenterWhoseClaimWon()
        let hold = SlowWorkTests.Hold(race.server.keyHasher.worker)
        race.expectLeaseGivenBack(presenter, refusedWith: "server busy checking presenter keys")
        hold.end()
    }

    /// One check per address and room at a time (`limits.keyFailuresPerMinute` 1): the check
    /// after the claim is refused while the first is still counted.
    @Test func aKeyCheckRateLimitedAfterTheClaimGivesTheLeaseBack() throws {
        let race = try Race { $0.limits.keyFailuresPerMinute = 1 }
        let presenter = try race.presenterWhoseClaimWon()
        race.expectLeaseGivenBack(presenter, refusedWith: "too many presenter keys tried")
    }

    /// The presenter leaves while its key waits to be hashed after the claim.
    @Test func aPresenterWhoLeavesWhileItsKeyIsHashedAfterTheClaimGivesTheLeaseBack() throws {
        let race = try Race()
        let presenter = try race.presenterWhoseClaimWon()
        let worker = race.server.keyHasher.worker
        let (running, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        #expect(worker.perform(from: "holder") { running.signal(); release.wait() })
        running.wait()
        #expect(race.run { worker.waiting == 1 }, "the check after the claim waits for the worker")
        presenter.connection.hangUp()
        race.loop.advance(to: race.loop.now + 1_000_000)
        let hashes = race.server.keyHasher.slowHashes.load(ordering: .relaxed)
        release.signal()
        #expect(race.run { race.server.keyHasher.slowHashes.load(ordering: .relaxed) > hashes })
        race.expectLeaseGivenBack(presenter, refusedWith: nil)
    }
}

extension ClaimRaceTests {
    /// A client that left while its check waited for the address's shared count (a Redis round
    /// trip) is answered `.unwanted`, not left without an answer: its join may hold a lease to
    /// give back (before, the check ended silently).
    @Test func aCheckNoLongerWantedIsAnswered() throws {
        let race = try Race()
        let admission = KeyAdmission(failuresPerMinute: 10)
        let answer = Mutex<KeyAdmission.Outcome?>(nil)
        admission.check("k", against: nil, room: ClaimRaceTests.room, address: "10.0.0.3", engine: race.server.engine, on: race.loop,
                        wanted: { false }) { outcome in answer.withLock { $0 = outcome } }
        #expect(race.run { answer.withLock { $0 != nil } })
        guard case .unwanted? = answer.withLock({ $0 }) else { Issue.record("\(String(describing: answer.withLock { $0 }))"); return }
    }
}
