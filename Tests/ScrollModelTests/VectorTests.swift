import Foundation
import RoomKit
import Testing
@testable import ScrollModel

struct VectorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Loads a vector file from Protocol/vectors.
func vectors(_ name: String) throws -> JSON {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/vectors/\(name).json")
    return try JSON.parse(try String(contentsOf: url, encoding: .utf8))
}

extension JSON {
    var elements: [JSON] { if case .array(let a) = self { a } else { [] } }
    var members: [(String, JSON)] { if case .object(let m) = self { m } else { [] } }

    /// A member a vector must have: a missing one fails the test (it does not trap).
    subscript(required key: String) -> JSON {
        get throws {
            guard let value = self[key] else { throw VectorError("the vector has no \"\(key)\": \(text.prefix(80))") }
            return value
        }
    }

    /// This value as a string, which the vector must give.
    var requiredString: String {
        get throws {
            guard let value = string else { throw VectorError("not a string: \(text.prefix(80))") }
            return value
        }
    }

    /// Compact JSON text of this value (for sending vector messages).
    var text: String {
        var writer = JSONWriter()
        writer.value(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// The vectors name their sessions ("A", "B"); a server assigns ids. Each name gets the
/// next id, and ids in encoded messages are turned back into names for comparison.
struct SessionNames {
    private var ids: [String: SessionID] = [:]

    mutating func id(_ name: String) -> SessionID {
        if let id = ids[name] { return id }
        let id = SessionID(UInt64(ids.count + 1) << 32 | 0xA5)
        ids[name] = id
        return id
    }

    /// `json` with every string that is an assigned id replaced by its session's name.
    func named(_ json: JSON) -> JSON {
        switch json {
        case .string(let text):
            if let id = SessionID(text), let name = ids.first(where: { $0.value == id })?.key { return .string(name) }
            return json
        case .array(let elements): return .array(elements.map(named))
        case .object(let members): return .object(members.map { ($0, named($1)) })
        default: return json
        }
    }
}

/// Every member of `expected` is in `actual` with an equal value (objects compared the same way).
func matches(_ actual: JSON?, _ expected: JSON) -> Bool {
    guard let actual else { return false }
    switch expected {
    case .object(let members):
        return members.allSatisfy { name, value in matches(actual[name], value) }
    default:
        return actual == expected
    }
}

@Suite("Protocol vectors: scroll sequences")
struct ScrollSequenceVectorTests {
    @Test func everyStepYieldsTheExpectedState() throws {
        for testCase in try vectors("scroll-sequences")[required: "cases"].elements {
            var room = RoomCore(name: "v")
            var sessions = SessionNames()
            _ = room.join(sessions.id("D"), role: .presenter, name: nil, key: nil)
            for step in try testCase[required: "steps"].elements {
                let message = try ClientMessage.decode(step[required: "scroll"].text)
                guard case .success(let broadcasts) = room.receive(message, from: sessions.id("D")), case .state(let state)? = broadcasts.first else {
                    Issue.record("\(testCase["name"]?.string ?? "?"): scroll refused")
                    continue
                }
                let encoded = sessions.named(try JSON.parse(String(decoding: ServerMessage.state(state), as: UTF8.self)))
                let expected = try step[required: "expect"]
                #expect(matches(encoded, expected), "\(testCase["name"]?.string ?? "?"): \(encoded.text) vs \(step["expect"]?.text ?? "")")
                for absent in step["absent"]?.elements ?? [] {
                    let key = try absent.requiredString
                    #expect(encoded[key] == nil, "\(key) should be absent in \(encoded.text)")
                }
            }
        }
    }
}

@Suite("Protocol vectors: invalid messages")
struct InvalidMessageVectorTests {
    @Test func eachIsRefusedWithItsCode() throws {
        for testCase in try vectors("invalid-messages")[required: "cases"].elements {
            let text = try testCase[required: "text"].requiredString
            #expect(throws: ProtocolError.self, "\(text)") { try ClientMessage.decode(text) }
            do {
                _ = try ClientMessage.decode(text)
            } catch {  // a ProtocolError: decode throws nothing else
                let code = try testCase[required: "code"].requiredString
                #expect(error.code.rawValue == code, "\(text)")
                #expect(!error.message.isEmpty)
            }
        }
    }
}

@Suite("Protocol vectors: rooms")
struct RoomVectorTests {
    @Test func scenarios() throws {
        for testCase in try vectors("rooms")[required: "cases"].elements {
            let name = try testCase[required: "name"].requiredString
            var room = RoomCore(name: "v")
            var sessions = SessionNames()
            for (index, step) in try testCase[required: "steps"].elements.enumerated() {
                let session = sessions.id(try step[required: "session"].requiredString)
                let label = "\(name), step \(index + 1)"
                var broadcasts: [Broadcast] = []
                if let join = step["join"] {
                    let role = try #require(Role(rawValue: try join[required: "role"].requiredString))
                    switch room.join(session, role: role, name: join["name"]?.string, key: join["key"]?.string) {
                    case .failure(let error):
                        #expect(step["error"]?.string == error.code.rawValue, "\(label): \(error)")
                        continue
                    case .success(let (welcome, made)):
                        #expect(step["error"] == nil, "\(label): expected \(step["error"]?.text ?? "")")
                        broadcasts = made
                        let encoded = sessions.named(try JSON.parse(String(decoding: ServerMessage.welcome(
                            room: "v", you: session, role: role, state: welcome.state, driver: welcome.driver,
                            presence: welcome.presence, document: welcome.document), as: UTF8.self)))
                        if let expected = step["welcome"] { #expect(matches(encoded, expected), "\(label): \(encoded.text)") }
                        #expect((welcome.document != nil) == (step["document"]?.bool ?? false), "\(label): document")
                    }
                } else if step["leave"] != nil {
                    broadcasts = room.leave(session)
                } else {
                    let message = try ClientMessage.decode(step[required: "send"].text)
                    switch room.receive(message, from: session) {
                    case .failure(let error):
                        #expect(step["error"]?.string == error.code.rawValue, "\(label): \(error)")
                        continue
                    case .success(let made):
                        #expect(step["error"] == nil, "\(label): expected \(step["error"]?.text ?? "")")
                        broadcasts = made
                    }
                }
                guard let expected = step["broadcasts"]?.elements else {
                    Issue.record("\(label): a step that is not refused must list its broadcasts")
                    continue
                }
                let encoded = try broadcasts.map { sessions.named(try JSON.parse(String(decoding: Self.encode($0), as: UTF8.self))) }
                #expect(encoded.count == expected.count, "\(label): \(encoded.map(\.text))")
                for (actual, wanted) in zip(encoded, expected) {
                    #expect(matches(actual, wanted), "\(label): \(actual.text) vs \(wanted.text)")
                }
            }
        }
    }

    static func encode(_ broadcast: Broadcast) -> [UInt8] {
        switch broadcast {
        case .state(let state): ServerMessage.state(state)
        case .driver(let id, let name): ServerMessage.driver(id?.description, name: name)
        case .document(let document): ServerMessage.document(document)
        case .presence(let presence): ServerMessage.presence(presence)
        }
    }
}

@Suite("Protocol vectors: fingerprints")
struct FingerprintVectorTests {
    @Test func fnv1a64() throws {
        for testCase in try vectors("fingerprints")[required: "cases"].elements {
            let (text, fingerprint) = (try testCase[required: "text"].requiredString, try testCase[required: "fingerprint"].requiredString)
            #expect(Fingerprint.of(text) == fingerprint)
        }
    }
}

@Suite("Decoding server messages defensively")
struct ServerEventDecodingTests {
    @Test(arguments: [
        #"{"type":"state","seq":1e400,"offset":1,"direction":"down","atTop":false,"atBottom":false,"by":"x"}"#,
        #"{"type":"state","seq":1,"offset":1e400,"direction":"down","atTop":false,"atBottom":false,"by":"x"}"#,
        #"{"type":"state","seq":1,"offset":1,"progress":1e999,"direction":"down","atTop":false,"atBottom":false,"by":"x"}"#,
        #"{"type":"state","seq":-4,"offset":1,"direction":"down","atTop":false,"atBottom":false,"by":"x"}"#,
    ])
    func nonFiniteOrImpossibleNumbersAreDropped(_ text: String) throws {
        #expect(try ServerEvent.decode(text) == nil)
    }

    @Test func fractionsAreClampedAndCountsSanitized() throws {
        let state = try ServerEvent.decode(#"{"type":"state","seq":3,"offset":1,"anchor":{"id":"a","fraction":7},"direction":"up","atTop":false,"atBottom":false,"by":"x","t":12}"#)
        guard case .state(let decoded)? = state else { Issue.record("not a state"); return }
        #expect(decoded.anchor == Anchor(id: "a", fraction: 1))
        #expect(decoded.t == "12")
        #expect(try ServerEvent.decode(#"{"type":"presence","presenters":1e400,"followers":2,"detached":-1}"#) == .presence(Presence(presenters: 0, followers: 2, detached: 0)))
    }
}
