import Logging
import RedisClient
import Testing
import Transport
@testable import Cluster

/// Runs `body` with an engine on a loop of its own, connected to `redis`; stops both after it.
func withEngine(on redis: RedisServer, _ body: (RedisRoomEngine) throws -> Void) throws {
    let group = try EventLoopGroup(count: 1)
    // Made before its loop runs (what a loop owns is set up there or before it starts).
    let engine = RedisRoomEngine(endpoint: try RedisEndpoint(url: redis.url), loop: group.loops[0], roomIdleSeconds: 60,
                                 logger: Logger(label: "test"))
    group.start()
    defer { group.shutdown() }
    engine.start()
    defer { engine.stop() }
    #expect(eventually(timeout: 15) { engine.isAvailable }, "the engine reached Redis")
    try body(engine)
}
