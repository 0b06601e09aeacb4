import Logging
import RedisClient
import RoomKit
import Testing
import Transport
@testable import Cluster

/// How often the lease holder's node writes its led states into the room's hash
/// (`WriteBackQueue`): each write is a script that compares, some ten times a plain `HSET` in
/// Redis's CPU, so a moving room is written once a second and a resting one soon after it stops.
@Suite("Write-back of led states into the room's hash")
struct WriteBackTests {
    static let ms: UInt64 = 1_000_000
    static let room = "wb"
    static let ann = "00000000000000a1"

    func state(_ seq: Int) -> [UInt8] { Array(#"{"type":"state","seq":\#(seq),"offset":\#(seq),"by":"\#(Self.ann)"}"#.utf8) }

    @Test func aRestingRoomIsWrittenWithinTheRestTimeAndACheck() {
        var queue = WriteBackQueue()
        queue.record(room: "a", seq: 5, by: Self.ann, message: state(5), now: 0)
        #expect(queue.takeDue(now: 249 * Self.ms).isEmpty)
        let due = queue.takeDue(now: 250 * Self.ms)
        #expect(due.map(\.room) == ["a"])
        #expect(due.first?.state.seq == 5)
        #expect(queue.isEmpty)
    }

    @Test func aMovingRoomWaitsAtMostASecond() {
        var queue = WriteBackQueue()
        var now: UInt64 = 0
        var written: [Int] = []
        for seq in 1...40 {  // 20 Hz for 2 s
            queue.record(room: "a", seq: seq, by: Self.ann, message: state(seq), now: now)
            written += queue.takeDue(now: now).map(\.state.seq)
            now += 50 * Self.ms
        }
        #expect(written == [21], "once, a second after the first state: the newest then")
    }

    @Test func anOlderStateDoesNotReplaceANewerOne() {
        var queue = WriteBackQueue()
        queue.record(room: "a", seq: 7, by: Self.ann, message: state(7), now: 0)
        queue.record(room: "a", seq: 6, by: Self.ann, message: state(6), now: 10 * Self.ms)
        #expect(queue.take(room: "a")?.seq == 7)
        #expect(queue.take(room: "a") == nil)
    }

    /// The engine against the simulated Redis: a room moving at 20 Hz for 3 s gets its hash
    /// written about once a second (four times a second before, one script each), and where
    /// it stops is in the hash within 375 ms and a round trip.
    @Test func theEngineWritesAMovingRoomOnceASecondAndWhereItStops() throws {
        let node = try SimEngine(seed: 1)
        let (loop, redis, engine) = (node.loop, node.redis, node.engine)
        #expect(engine.isAvailable)
        engine.control(room: Self.room, .take(session: Self.ann, name: nil)) { _ in }
        loop.advance(to: loop.now + 50 * Self.ms)
        let hash = RedisRoomEngine.roomKey(Self.room)
        #expect(redis.strings[hash + ":lease"] == Array(Self.ann.utf8), "the take ran")

        var writes = 0
        var last = redis.hgetText(hash, "seq")
        for seq in 1_001...1_060 {  // 3 s at 20 Hz
            engine.publish(led: state(seq), seq: seq, by: Self.ann, room: Self.room, keep: true)
            loop.advance(to: loop.now + 50 * Self.ms)
            let now = redis.hgetText(hash, "seq")
            if now != last { writes += 1 }
            last = now
        }
        #expect((2...4).contains(writes), "written \(writes) times in 3 s of moving")
        loop.advance(to: loop.now + 375 * Self.ms + 2 * redis.delay.upperBound)
        #expect(redis.hgetText(hash, "seq") == "1060", "where the room stopped")
        node.stop()
    }

    /// Rooms that come due together are written in one script call (16 at most; one each on a
    /// Redis Cluster, whose scripts keep to one slot), and each room is still written only under
    /// its own lease: a state of a driver who does not hold that room's lease is left out.
    @Test(arguments: [false, true])
    func roomsDueTogetherAreWrittenInOneCall(sharded: Bool) throws {
        let node = try SimEngine(seed: 2, sharded: sharded)
        let (loop, redis, engine) = (node.loop, node.redis, node.engine)
        #expect(engine.isAvailable)
        let rooms = (0..<70).map { "wb\($0)" }
        for room in rooms.dropLast() { engine.control(room: room, .take(session: Self.ann, name: nil)) { _ in } }
        loop.advance(to: loop.now + 50 * Self.ms)
        for room in rooms { engine.publish(led: state(2_000), seq: 2_000, by: Self.ann, room: room, keep: true) }
        loop.advance(to: loop.now + 375 * Self.ms + 2 * redis.delay.upperBound)
        let written = rooms.filter { redis.hgetText(RedisRoomEngine.roomKey($0), "seq") == "2000" }
        #expect(written == Array(rooms.dropLast()), "every room under Ann's lease, not the one she does not hold")
        #expect(redis.writeBackCalls == (sharded ? 70 : 5), "\(redis.writeBackCalls) calls")
        node.stop()
    }
}
