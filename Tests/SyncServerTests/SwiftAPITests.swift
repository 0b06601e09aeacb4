import Foundation
import Operations
import ScrollModel
import SyncClient
import SyncServer
import Testing

/// The Swift API (README, "Use it from Swift"): `RoomSession` with async/await against a
/// server in this process, and the README's example program following it by block id.
@Suite("Use it from Swift")
struct SwiftAPITests {
    static let talk = "# Talk\n\nIntro.\n\n## Part two\n\n" + String(repeating: "A line of part two.\n\n", count: 40)
        + "## Part three\n\n" + String(repeating: "A line of part three.\n\n", count: 40)

    static func server() throws -> Server {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.dataDirectory = nil
        configuration.loops = 1
        return try Server(configuration: configuration)
    }

    /// The next event `matching`, or nil when the session ends first.
    static func next(_ events: inout RoomSession.Events.AsyncIterator, _ matching: (RoomSession.Event) -> Bool) async -> RoomSession.Event? {
        while let event = try? await events.next() {
            if matching(event) { return event }
        }
        return nil
    }

    @Test func aSessionSendsReceivesAndCloses() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        try await RoomSession.connect(to: server.url + "/rooms/swift?role=presenter&key=k") { presenter in
            let follower = try await RoomSession.connect(to: server.url + "/rooms/swift") { follower in
                var presenterEvents = presenter.events.makeAsyncIterator()
                var followerEvents = follower.events.makeAsyncIterator()
                let welcome = await Self.next(&presenterEvents) { if case .server(.welcome) = $0 { true } else { false } }
                guard case .server(.welcome(let greeting))? = welcome else { Issue.record("no welcome: \(String(describing: welcome))"); return follower }
                #expect(greeting.role == .presenter)
                #expect(await Self.next(&followerEvents) { if case .server(.welcome) = $0 { true } else { false } } != nil)

                try await presenter.send(.scroll(ScrollUpdate(offset: 12, viewport: 24, content: 200, anchor: Anchor(id: "part-two", fraction: 0))))
                let state = await Self.next(&followerEvents) { if case .server(.state) = $0 { true } else { false } }
                guard case .server(.state(let received))? = state else { Issue.record("no state: \(String(describing: state))"); return follower }
                #expect(received.anchor?.id == "part-two" && received.offset == 12 && received.direction == .none)
                return follower
            }
            // Leaving the closure closed the follower's session.
            var followerEvents = follower.events.makeAsyncIterator()
            #expect(await Self.next(&followerEvents) { $0 == .connection(.stopped) } != nil, "the follower's events end with stopped")
            #expect(try await followerEvents.next() == nil, "and then end")
            await #expect(throws: RoomSession.Failure.closed) { try await follower.send(.follow(false)) }
            await follower.close()  // a second close does nothing
            var presenterEvents = presenter.events.makeAsyncIterator()
            let left = await Self.next(&presenterEvents) { if case .server(.presence(let counts)) = $0 { counts.followers == 0 } else { false } }
            #expect(left != nil, "the server saw the follower leave")
        }
    }

    /// Cancelling the task that reads a room ends `events` with `CancellationError` and closes
    /// the connection: the server sees the follower leave.
    @Test func cancellingTheTaskClosesTheRoom() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        try await RoomSession.connect(to: server.url + "/rooms/cancel?role=presenter&key=k") { presenter in
            var presenterEvents = presenter.events.makeAsyncIterator()
            let reading = Task {
                try await RoomSession.connect(to: server.url + "/rooms/cancel") { follower in
                    for try await _ in follower.events {}
                }
            }
            #expect(await Self.next(&presenterEvents) { if case .server(.presence(let counts)) = $0 { counts.followers == 1 } else { false } } != nil)
            reading.cancel()
            await #expect(throws: CancellationError.self) { try await reading.value }
            #expect(await Self.next(&presenterEvents) { if case .server(.presence(let counts)) = $0 { counts.followers == 0 } else { false } } != nil,
                    "the cancelled session closed its connection")
        }
    }

    /// A reader that does not keep up gets the newest state, not a backlog of every state.
    @Test func aSlowReaderGetsTheNewestState() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        try await RoomSession.connect(to: server.url + "/rooms/slow?role=presenter&key=k") { presenter in
            try await RoomSession.connect(to: server.url + "/rooms/slow") { follower in
                try await Self.readSlowly(presenter: presenter, follower: follower)
            }
        }
    }

    /// The presenter moves 300 times while the follower's reader takes nothing; then it reads.
    static func readSlowly(presenter: RoomSession, follower: RoomSession) async throws {
        var presenterEvents = presenter.events.makeAsyncIterator()
        #expect(await Self.next(&presenterEvents) { if case .server(.presence(let counts)) = $0 { counts.followers == 1 } else { false } } != nil)
        let moves = 300
        for offset in 1...moves {
            try await presenter.send(.scroll(ScrollUpdate(offset: Double(offset), viewport: 24, content: 2000)))
        }
        // The follower's connection takes every state while its reader takes none.
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !follower.waitingEvents.contains(where: {
            if case .server(.state(let state)) = $0 { state.offset == Double(moves) } else { false }
        }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(follower.waitingEvents.count < 10, "what waits is bounded: \(follower.waitingEvents.count) events")
        var read = [RoomSession.Event]()
        var iterator = follower.events.makeAsyncIterator()
        while let event = try await iterator.next() {
            read.append(event)
            if case .server(.state(let state)) = event, state.offset == Double(moves) { break }
        }
        let states = read.filter { if case .server(.state) = $0 { true } else { false } }.count
        #expect(states < 20, "a slow reader saw \(states) states of \(moves), not a backlog")
    }

    @Test func theReadmeExampleFollowsByBlockId() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        try await RoomSession.connect(to: server.url + "/rooms/talk?role=presenter&key=k") { presenter in
            var events = presenter.events.makeAsyncIterator()
            #expect(await Self.next(&events) { if case .server(.welcome) = $0 { true } else { false } } != nil)
            try await presenter.send(.document(name: "talk.md", format: .markdown, text: Self.talk))
            #expect(await Self.next(&events) { if case .server(.document) = $0 { true } else { false } } != nil)
            try await presenter.send(.scroll(ScrollUpdate(offset: 5, viewport: 24, content: 500, anchor: Anchor(id: "part-two", fraction: 0))))
            #expect(await Self.next(&events) { if case .server(.state) = $0 { true } else { false } } != nil)

            let example = ServerProcess.binary.deletingLastPathComponent().appendingPathComponent("follow-example").path
            let child = try Child(example, [server.url + "/rooms/talk", "2"])
            // Once the example has joined (the presenter hears of a follower), the presenter moves on.
            #expect(await Self.next(&events) { if case .server(.presence(let counts)) = $0 { counts.followers == 1 } else { false } } != nil)
            try await presenter.send(.scroll(ScrollUpdate(offset: 300, viewport: 24, content: 500, anchor: Anchor(id: "part-three", fraction: 0))))
            #expect(child.wait(timeout: 10) == 0, "the example closes its session and exits after two states: \(child.output)")
            #expect(child.lines == ["seq 1: part-two", "seq 2: part-three"], "a late joiner is placed at once, then follows by block id")
        }
    }
}

extension SwiftAPITests {
    /// The README shows the example program as it is built and run here.
    @Test func theReadmeShowsTheExampleAsItIs() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let example = try String(contentsOf: root.appendingPathComponent("Examples/FollowFromSwift/main.swift"), encoding: .utf8)
        let section = try #require(readme.range(of: "## Use it from Swift").map { readme[$0.upperBound...] })
        let code = try #require(section.range(of: "```swift\n").flatMap { start in
            section[start.upperBound...].range(of: "```\n").map { String(section[start.upperBound..<$0.lowerBound]) }
        })
        #expect(code == example)
    }
}
