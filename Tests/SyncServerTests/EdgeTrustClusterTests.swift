import Foundation
import ScrollModel
import Testing

/// Issue 44.2 across nodes (a real redis-server): a follow key is set only by a presenter who
/// proved the room's presenter key as Redis holds it, on whichever node it joins.
extension ClusterPrivateRoomTests {
    @Test func aFollowKeyNeedsTheRoomsPresenterKeyOnEveryNode() throws {
        let redis = try RedisServer()
        let (a, b) = (try cluster.sharingNode(redis), try cluster.sharingNode(redis))
        // B holds the room before its presenter key is bound (on A): B does not know that key.
        let audience = try RoomConnection(port: b.port, path: "/rooms/stage")
        #expect(audience.wait { $0.contains(#""type":"welcome""#) })
        let (presenter, welcome) = try cluster.join(a, "stage", query: "role=presenter&key=k&name=Ann")
        let me = try #require(welcome["you"]?.string)
        #expect(presenter.wait(timeout: 15) { $0.contains(#""type":"driver","driver":"\#(me)""#) })
        presenter.send(cluster.scroll(10))
        #expect(audience.wait(for: cluster.hasOffset(10)), "the key is bound in Redis: what A wrote after it reached B")

        // Without a key, on either node: refused with the reason.
        for node in [a, b] {
            let keyless = try RoomConnection(port: node.port, path: "/rooms/stage?role=presenter&followKey=EVIL-1")
            #expect(keyless.wait { $0.hasPrefix("close 1008") }, "\(keyless.received)")
            #expect(keyless.received.contains { $0.contains(#""code":"unauthorized""#) } && !keyless.received.contains { $0.contains(#""type":"welcome""#) })
        }
        // With a key of its own on B: B heard the key A bound (a `key` change, docs/cluster.md
        // §7.18; before, B knew no key and admitted it, only its follow key was not set), so it
        // is refused as a wrong key and sets nothing. (The binding race, a key bound on B before
        // it hears A's, is `RoomRulesTests.aFollowKeyWaitsForTheEnginesKeyBinding`.)
        let stale = try RoomConnection(port: b.port, path: "/rooms/stage?role=presenter&key=evil&followKey=EVIL-2")
        #expect(stale.wait { $0.contains(#""code":"unauthorized""#) }, "\(stale.received)")
        #expect(!stale.received.contains { $0.contains(#""type":"welcome""#) })
        #expect(!audience.received.contains { $0.hasPrefix("close") }, "the audience stays: \(audience.received.suffix(3))")
        let (late, _) = try cluster.join(a, "stage")
        _ = late  // the room is not private on A: a follower without a key is welcomed
        presenter.send(cluster.scroll(20))
        #expect(audience.wait(for: cluster.hasOffset(20)), "and the room goes on")
    }
}

extension BrowserViewerTests {
    /// Issue 44.2: the presenter's form refuses a follow key without a presenter key, saying
    /// why, before it asks the server; and a room nobody has opened yet (whose document answers
    /// 401, as a private room's does) is followed without asking for a key.
    @Test func theFormRefusesAFollowKeyWithoutAPresenterKey() throws {
        let server = try InProcessNode()
        let name = "keyless-\(UUID().uuidString.prefix(6))"
        let browser = try Chromium()
        let page = try browser.page(width: 1000, height: 700)
        try page.call("Page.navigate", #"{"url":\#(Self.js("http://127.0.0.1:\(server.port)/rooms/\(name)"))}"#)
        #expect(page.wait("document.getElementById('ui_link').textContent === '● live'"), "a room not there yet is followed, not asked for a key")
        #expect(page.wait("document.getElementById('ui_private').hidden"))
        _ = try page.evaluate("""
            const f = document.getElementById('ui_newfollowkey'); f.value = 'fk-1'; f.dispatchEvent(new Event('input'));
            document.getElementById('ui_present').requestSubmit()
            """)
        #expect(page.wait("document.getElementById('ui_key').validationMessage.includes('give the room\\'s presenter key')"),
                "\(String(describing: try? page.evaluate("document.getElementById('ui_key').validationMessage").string))")
        #expect(try page.evaluate("window.scrollsync.state.role").string == "follower", "nothing was asked of the server")
        let follower = try RoomConnection(port: server.port, path: "/rooms/\(name)")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) }, "the room stayed public")
    }
}
