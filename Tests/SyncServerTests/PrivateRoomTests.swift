import Access
import Foundation
import Operations
import ScrollModel
@testable import SyncServer
import Testing
import Transport

/// Private rooms (issue 26.11): follow keys, applications' signed tokens, and what stays
/// hidden. On the in-process server.
@Suite("Private rooms")
struct PrivateRoomTests {
    static func get(_ server: Server, _ loop: EventLoop, _ path: String, headers: [String] = [], from address: String = "127.0.0.1") -> String {
        let connection = server.connectEmbedded(from: address)
        connection.write(Array("GET \(path) HTTP/1.1\r\nHost: test\r\n\(headers.map { $0 + "\r\n" }.joined())\r\n".utf8))
        var answer = [UInt8]()
        loop.advance(until: { answer += connection.read(); return connection.sendingShutDown || connection.closed })
        return String(decoding: answer, as: UTF8.self)
    }

    /// A sample of the in-process server's /metrics (`name{labels}`), or -1.
    static func metric(_ server: Server, _ loop: EventLoop, _ sample: String) -> Double {
        let text = get(server, loop, "/metrics")
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(sample + " ") }) else { return -1 }
        return Double(line.split(separator: " ").last!) ?? -1
    }

    /// A room made private by its presenter, with a document.
    static func privateRoom(_ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> (Server, EventLoop, InProcessClient) {
        let (server, loop) = try InProcessRoomTests.server(configure)
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/secret?role=presenter&key=k&followKey=open-sesame-42")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        presenter.send(##"{"type":"document","name":"plan.md","format":"markdown","text":"# The plan"}"##)
        #expect(presenter.wait { $0.contains(#""type":"document""#) })
        return (server, loop, presenter)
    }

    @Test func aFollowKeyRecordMatchesItsKeyOnly() {
        let record = FollowKey.record("open-sesame", matching: nil)
        #expect(FollowKey.isValid(record) && !record.contains("open-sesame"))
        #expect(FollowKey.matches("open-sesame", record: record))
        #expect(FollowKey.record("open-sesame", matching: record) == record, "the same salt gives the same record")
        for other in ["open-sesamE", "", "open-sesame ", "open"] { #expect(!FollowKey.matches(other, record: record), "\(other)") }
        for broken in [FollowKey.unreadable, "", String(record.dropLast()), record.replacingOccurrences(of: "sha256$", with: "sha512$")] {
            #expect(!FollowKey.matches("open-sesame", record: broken), "\(broken)")
        }
    }

    @Test func aFollowerNeedsTheFollowKeyAndIsToldWhyBeforeTheUpgrade() throws {
        let (server, loop, _) = try Self.privateRoom()
        let without = try InProcessClient(server, loop: loop, path: "/rooms/secret")
        #expect(without.status.hasPrefix("HTTP/1.1 401 ") && without.answer.contains("room secret is private"), "\(without.answer)")
        let wrong = try InProcessClient(server, loop: loop, path: "/rooms/secret?followKey=guess")
        #expect(wrong.status.hasPrefix("HTTP/1.1 403 ") && wrong.answer.contains("wrong follow key"), "\(wrong.answer)")
        let right = try InProcessClient(server, loop: loop, path: "/rooms/secret?followKey=open-sesame-42")
        #expect(right.wait { $0.contains(#""type":"welcome""#) })
        #expect(right.wait { $0.contains("# The plan") }, "the document follows the welcome")
        #expect(Self.metric(server, loop, #"scrollsync_refusals_total{reason="follow_key"}"#) == 2, "refusals are counted by reason")
    }

    @Test func aPrivateRoomIsLeftOutOfTheListAndItsDocumentNeedsTheKey() throws {
        let (server, loop, _) = try Self.privateRoom()
        let open = try InProcessClient(server, loop: loop, path: "/rooms/public?role=presenter&key=k")
        #expect(open.wait { $0.contains(#""type":"welcome""#) })
        let list = Self.get(server, loop, "/rooms")
        #expect(list.contains(#""name":"public""#) && !list.contains("secret"), "\(list)")
        #expect(Self.get(server, loop, "/rooms/secret/document").hasPrefix("HTTP/1.1 401 "))
        #expect(Self.get(server, loop, "/rooms/secret/document?followKey=nope").hasPrefix("HTTP/1.1 403 "))
        let document = Self.get(server, loop, "/rooms/secret/document?followKey=open-sesame-42")
        #expect(document.hasPrefix("HTTP/1.1 200 ") && document.contains("The plan"), "\(document.prefix(300))")
    }

    @Test func followersInARoomThatBecomesPrivateAreClosedWithTheReason() throws {
        let (server, loop) = try InProcessRoomTests.server()
        let early = try InProcessClient(server, loop: loop, path: "/rooms/lobby")
        #expect(early.wait { $0.contains(#""type":"welcome""#) })
        let presenter = try InProcessClient(server, loop: loop, path: "/rooms/lobby?role=presenter&key=k&followKey=fk-123456")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        #expect(loop.advance(until: { early.pump(); return early.closeCode != nil }))
        #expect(early.closeCode == 1008)
        let again = try InProcessClient(server, loop: loop, path: "/rooms/lobby?followKey=fk-123456")
        #expect(again.wait { $0.contains(#""type":"welcome""#) })
        // The presenter reconnecting with the same key changes nothing: its followers stay.
        let back = try InProcessClient(server, loop: loop, path: "/rooms/lobby?role=presenter&key=k&followKey=fk-123456")
        #expect(back.wait { $0.contains(#""type":"welcome""#) })
        loop.advance(by: 100_000_000)
        again.pump()
        #expect(again.closeCode == nil)
    }

    @Test func wrongFollowKeysCountAgainstTheAddress() throws {
        let (server, loop, _) = try Self.privateRoom()
        let answers = try (0..<12).map { try InProcessClient(server, loop: loop, path: "/rooms/secret?followKey=guess\($0)", from: "198.51.100.9").status }
        #expect(answers.prefix(10).allSatisfy { $0.hasPrefix("HTTP/1.1 403 ") }, "\(answers)")
        #expect(answers.suffix(2).allSatisfy { $0.hasPrefix("HTTP/1.1 429 ") }, "\(answers)")
        let other = try InProcessClient(server, loop: loop, path: "/rooms/secret?followKey=open-sesame-42", from: "203.0.113.4")
        #expect(other.upgraded, "another address is not locked out")
    }

    /// A data directory that holds the private room of `privateRoom()`, written and released.
    static func storedPrivateRoom() throws -> String {
        let directory = StoreFaultTests.temporaryDirectory()
        let (server, loop, _) = try privateRoom { $0.dataDirectory = directory }
        #expect(loop.advance(until: { server.store?.flush() == true }))
        server.shutdown()
        return directory
    }

    @Test func aRestartKeepsTheRoomPrivate() throws {
        let directory = try Self.storedPrivateRoom()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let record = try String(contentsOfFile: directory + "/secret.follow", encoding: .utf8)
        #expect(!record.contains("open-sesame-42"), "the key itself is never written")
        let (again, loop) = try InProcessRoomTests.server { $0.dataDirectory = directory }
        defer { again.shutdown() }
        #expect(try InProcessClient(again, loop: loop, path: "/rooms/secret").status.hasPrefix("HTTP/1.1 401 "))
        let right = try InProcessClient(again, loop: loop, path: "/rooms/secret?followKey=open-sesame-42")
        #expect(right.wait { $0.contains(#""type":"welcome""#) })
    }

    @Test func aDamagedFollowKeyFileKeepsTheRoomPrivate() throws {
        let directory = try Self.storedPrivateRoom()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.removeItem(atPath: directory + "/secret.follow")
        let (again, loop) = try InProcessRoomTests.server { $0.dataDirectory = directory }
        defer { again.shutdown() }
        #expect(try InProcessClient(again, loop: loop, path: "/rooms/secret?followKey=open-sesame-42").status.hasPrefix("HTTP/1.1 403 "),
                "the room stays private to everyone but presenters until its key is set again")
        let presenter = try InProcessClient(again, loop: loop, path: "/rooms/secret?role=presenter&key=k&followKey=new-key-7890")
        #expect(presenter.wait { $0.contains(#""type":"welcome""#) })
        #expect(try InProcessClient(again, loop: loop, path: "/rooms/secret?followKey=new-key-7890").upgraded)
    }
}

@Suite("Signed room tokens (PROTOCOL.md §2.1)")
struct TokenTests {
    static let secret = "test-secret-0123456789abcdef0123456789abcdef"

    static func vectors() throws -> JSON {
        let url = ConfigurationTests.repository.appendingPathComponent("Protocol/vectors/tokens.json")
        return try JSON.parse(try String(contentsOf: url, encoding: .utf8))
    }

    @Test func tokensMintedByPythonsStandardLibraryAreJudgedAsTheVectorsSay() throws {
        let vectors = try Self.vectors()
        let verifier = TokenVerifier(secret: try #require(vectors["secret"]?.string))
        let now = Int(try #require(vectors["now"]?.double))
        guard case .array(let cases)? = vectors["cases"] else { Issue.record("no cases"); return }
        #expect(cases.count >= 15)
        for entry in cases {
            let name = entry["name"]?.string ?? "?"
            let room = try #require(entry["room"]?.string)
            let role = try #require(entry["role"]?.string.flatMap(Role.init(rawValue:)))
            var status = 200
            switch verifier.verify(try #require(entry["token"]?.string), now: now) {
            case .failure(let error): status = error.status
            case .success(let claims):
                if !claims.covers(room: room) || !claims.allows(role) { status = 403 }
                if let expected = entry["claims"] {
                    #expect(claims.room == expected["room"]?.string && claims.role.rawValue == expected["role"]?.string
                            && claims.name == expected["name"]?.string, "\(name): \(claims)")
                }
            }
            #expect(status == Int(entry["status"]?.double ?? 0), "\(name): \(status)")
        }
    }

    @Test func whatTheServerMintsItVerifies() {
        let verifier = TokenVerifier(secret: Self.secret)
        let token = verifier.mint(TokenClaims(room: "talk", role: .follower, name: "Bo", expires: 2_000), issuedAt: 1_000)
        #expect(verifier.verify(token, now: 1_500) == .success(TokenClaims(room: "talk", role: .follower, name: "Bo", expires: 2_000)))
        #expect((try? verifier.verify(token, now: 3_000).get()) == nil, "expired")
    }

    static func server(required: Bool = false) throws -> (Server, EventLoop) {
        try InProcessRoomTests.server { $0.authSecret = secret; $0.authRequired = required }
    }

    static func token(_ room: String, _ role: Role, name: String? = nil, expiresIn: Int = 600) -> String {
        let now = wallMilliseconds() / 1000
        return TokenVerifier(secret: secret).mint(TokenClaims(room: room, role: role, name: name, expires: now + expiresIn), issuedAt: now)
    }

    @Test func aTokenAdmitsAPresenterWithoutTheKeyAndAFollowerWithoutTheFollowKey() throws {
        let (server, loop) = try Self.server()
        let owner = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&key=k&followKey=fk-abcdef")
        #expect(owner.wait { $0.contains(#""type":"welcome""#) })
        let follower = try InProcessClient(server, loop: loop, path: "/rooms/talk?token=\(Self.token("talk", .follower))")
        #expect(follower.wait { $0.contains(#""type":"welcome""#) }, "\(follower.answer)")
        let bearer = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter",
                                         headers: ["Authorization: Bearer \(Self.token("talk", .presenter, name: "Ann"))"])
        #expect(bearer.wait { $0.contains(#""type":"welcome""#) }, "\(bearer.answer)")
        bearer.send(#"{"type":"control","action":"take"}"#)
        #expect(follower.wait { $0.contains(#""type":"driver""#) && $0.contains(#""name":"Ann""#) }, "the token's name is the presenter's")
    }

    @Test func tokensForAnotherRoomOrRoleOrExpiredAreRefusedBeforeTheUpgrade() throws {
        let (server, loop) = try Self.server()
        let other = try InProcessClient(server, loop: loop, path: "/rooms/talk?token=\(Self.token("else", .follower))")
        #expect(other.status.hasPrefix("HTTP/1.1 403 ") && other.answer.contains("for room else"), "\(other.answer)")
        let lesser = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&token=\(Self.token("talk", .follower))")
        #expect(lesser.status.hasPrefix("HTTP/1.1 403 "), "\(lesser.answer)")
        let expired = try InProcessClient(server, loop: loop, path: "/rooms/talk?token=\(Self.token("talk", .follower, expiresIn: -120))")
        #expect(expired.status.hasPrefix("HTTP/1.1 401 ") && expired.answer.contains("expired"), "\(expired.answer)")
        let garbage = try InProcessClient(server, loop: loop, path: "/rooms/talk?token=abc.def.ghi")
        #expect(garbage.status.hasPrefix("HTTP/1.1 401 "))
        #expect(PrivateRoomTests.metric(server, loop, #"scrollsync_refusals_total{reason="token"}"#) == 4)
    }

    @Test func withAuthRequiredEveryRoomConnectionNeedsAToken() throws {
        let (server, loop) = try Self.server(required: true)
        let bare = try InProcessClient(server, loop: loop, path: "/rooms/talk")
        #expect(bare.status.hasPrefix("HTTP/1.1 401 ") && bare.answer.contains("only with a signed token"), "\(bare.answer)")
        let keyed = try InProcessClient(server, loop: loop, path: "/rooms/talk?role=presenter&key=k")
        #expect(keyed.status.hasPrefix("HTTP/1.1 401 "), "a presenter key is not a token")
        #expect(try InProcessClient(server, loop: loop, path: "/rooms/talk?token=\(Self.token("talk", .follower))").upgraded)
    }

    @Test func theAdminTokenGuardsRoomsAndMetrics() throws {
        let (server, loop) = try InProcessRoomTests.server { $0.adminToken = "admin-token-0123456789" }
        for path in ["/rooms", "/metrics"] {
            #expect(PrivateRoomTests.get(server, loop, path).hasPrefix("HTTP/1.1 401 "), "\(path)")
            #expect(PrivateRoomTests.get(server, loop, path, headers: ["Authorization: Bearer admin-token-0123456789"]).hasPrefix("HTTP/1.1 200 "), "\(path)")
        }
    }
}
