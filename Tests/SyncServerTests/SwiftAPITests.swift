import Foundation
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
    static func next(_ events: inout AsyncStream<RoomSession.Event>.Iterator, _ matching: (RoomSession.Event) -> Bool) async -> RoomSession.Event? {
        while let event = await events.next() {
            if matching(event) { return event }
        }
        return nil
    }

    @Test func aSessionSendsReceivesAndCloses() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let presenter = try RoomSession(url: server.url + "/rooms/swift?role=presenter&key=k")
        let follower = try RoomSession(url: server.url + "/rooms/swift")
        var presenterEvents = presenter.events.makeAsyncIterator()
        var followerEvents = follower.events.makeAsyncIterator()
        let welcome = await Self.next(&presenterEvents) { if case .server(.welcome) = $0 { true } else { false } }
        guard case .server(.welcome(let greeting))? = welcome else { Issue.record("no welcome: \(String(describing: welcome))"); return }
        #expect(greeting.role == .presenter)
        #expect(await Self.next(&followerEvents) { if case .server(.welcome) = $0 { true } else { false } } != nil)

        try await presenter.send(.scroll(ScrollUpdate(offset: 12, viewport: 24, content: 200, anchor: Anchor(id: "part-two", fraction: 0))))
        let state = await Self.next(&followerEvents) { if case .server(.state) = $0 { true } else { false } }
        guard case .server(.state(let received))? = state else { Issue.record("no state: \(String(describing: state))"); return }
        #expect(received.anchor?.id == "part-two" && received.offset == 12 && received.direction == .none)

        await follower.close()
        #expect(await Self.next(&followerEvents) { $0 == .connection(.stopped) } != nil, "the follower's events end with stopped")
        #expect(await followerEvents.next() == nil, "and then end")
        await #expect(throws: RoomSession.Failure.closed) { try await follower.send(.follow(false)) }
        await follower.close()  // a second close does nothing
        await presenter.close()
    }

    @Test func theReadmeExampleFollowsByBlockId() async throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let presenter = try RoomSession(url: server.url + "/rooms/talk?role=presenter&key=k")
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
        await presenter.close()
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
