@testable import SyncServer
import Testing

/// The room endpoint's own parts that are plain logic: its room name check and its query.
/// (The room's parts below the front are `RoomPartsTests`, in HubTests.)
@Suite("Room endpoint parts")
struct RoomEndpointPartsTests {
    /// 1–64 of `A–Z a–z 0–9 . _ -`, and never `.` or `..` (a browser rewrites them out of a path).
    @Test(arguments: [("a", true), ("Room_1.x-2", true), ("...", true), (".a", true), ("a..", true), (String(repeating: "z", count: 64), true),
                      ("", false), (".", false), ("..", false), (String(repeating: "z", count: 65), false), ("bad name", false),
                      ("caf\u{E9}", false), ("a/b", false), ("a%2e", false), ("\u{0}", false)])
    func roomNamesAreChecked(name: String, valid: Bool) {
        #expect(RoomEndpoint.isValidRoomName(name) == valid, "\(name.debugDescription)")
    }

    /// A query's first value of a name wins; no query at all has no values.
    @Test func queryParametersDecodeAndTheFirstWins() throws {
        let query = try Query("role=presenter&name=Ann+Lee&role=follower&key=a%26b")
        #expect(query["role"] == "presenter")
        #expect(query["name"] == "Ann Lee")
        #expect(query["key"] == "a&b")
        #expect(query["followKey"] == nil)
        let empty = try Query("")
        #expect(empty["role"] == nil)
        #expect(throws: Query.Malformed.self) { try Query("key=%zz") }
    }
}
