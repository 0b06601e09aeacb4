package import Access
import HTTP1
import Hub
package import RoomKit
import ScrollModel
import Synchronization
import Transport
import WebSocketChannel
import WebSocketCore

/// `GET /rooms/{name}`: the ScrollSync protocol (Protocol/PROTOCOL.md).
/// Query: `role=presenter|follower` (default follower), `key=…`, `name=…`, `followKey=…`,
/// `token=…` (or `Authorization: Bearer TOKEN`), `record=1` (a presenter: record the room).
public struct RoomEndpoint: WebSocketEndpoint {
    public let limits: WebSocketConnection.Limits
    /// Checks applications' signed tokens (`auth.secret`); nil: tokens are not accepted.
    var tokens: TokenVerifier?
    /// Every room connection needs a token (`auth.required`).
    var tokenRequired = false
    /// The hub, message limits, scroll rate and counters: what every member of this endpoint
    /// shares (one object, not a copy per connection).
    private let shared: RoomMember.Shared
    public var hub: any RoomHub { shared.hub }
    public var messageLimits: ClientMessage.Limits { shared.limits }
    /// Scrolls per second per presenter (0: no limit) and the burst allowed before it applies.
    public var scrollRate: Double { shared.scrollLimit?.rate ?? 0 }
    public var scrollBurst: Int { Int(shared.scrollLimit?.burst ?? 1) }
    public var subprotocols: [String] { Self.subprotocols }
    private static let subprotocols = [protocolName]
    public var sharesCompressedFrames: Bool { true }
    /// 64 KiB of send buffer: a few hundred states at most wait in the kernel for a slow
    /// follower; the rest of its backlog is conflated into the newest state. And 4 KiB of
    /// states (about 20) may wait in the kernel for a window the follower does not open;
    /// what comes after them waits in the one-state slot, where a newer one replaces it.
    /// Without it, a follower that stops reading for two seconds at 60 Hz finds 120 stale
    /// states in the kernel's buffers when it reads again (BENCHMARKS.md, 2026-11-26).
    /// The server listens with it, so a room's sockets are accepted with it.
    public var sendBuffer: SendBufferSize? { Self.sendBuffer }
    public static let sendBuffer = SendBufferSize(bytes: 64 << 10, unsent: 4 << 10)

    /// - Parameter limits: 2 MiB messages: a 1 MiB document, escaped, fits.
    public init(hub: any RoomHub, limits: WebSocketConnection.Limits = .init(maxFrameSize: 2 << 20, maxMessageSize: 2 << 20),
                messageLimits: ClientMessage.Limits = .init(), scrollRate: Double = 0, scrollBurst: Int = 1) {
        self.init(hub: hub, limits: limits, messageLimits: messageLimits, scrollRate: scrollRate, scrollBurst: scrollBurst,
                  documentsPerMinute: 0, documentBurst: 1, messagesPerSecond: 0, messageBurst: 1, counters: nil)
    }

    /// - Parameters: documentsPerMinute: documents a presenter may share per minute (0: no
    ///   limit), `documentBurst` of them at once; `messagesPerSecond`: any message per
    ///   connection (0: no limit), `messageBurst` at once, past it close 1008.
    init(hub: any RoomHub, limits: WebSocketConnection.Limits, messageLimits: ClientMessage.Limits, scrollRate: Double, scrollBurst: Int,
         documentsPerMinute: Int, documentBurst: Int, messagesPerSecond: Double, messageBurst: Int, counters: ServerCounters?,
         ids: SessionIDSource = .process) {
        self.limits = limits
        func number(_ value: Double) -> String { value.rounded() == value ? String(Int(value)) : String(value) }
        let scrolls = scrollRate > 0 ? RateLimit(rate: scrollRate, burst: Double(max(1, scrollBurst)), description: "\(number(scrollRate)) scrolls per second") : nil
        let documents = documentsPerMinute > 0
            ? RateLimit(rate: Double(documentsPerMinute) / 60, burst: Double(max(1, documentBurst)), description: "\(documentsPerMinute) documents per minute") : nil
        let messages = messagesPerSecond > 0
            ? RateLimit(rate: messagesPerSecond, burst: Double(max(1, messageBurst)), description: "\(number(messagesPerSecond)) messages per second") : nil
        shared = RoomMember.Shared(hub: hub, limits: messageLimits, scrollLimit: scrolls, documentLimit: documents, messageLimit: messages,
                                   counters: counters, ids: ids)
    }

    /// By UTF-8 bytes: a `Character` comparison costs about 4,000 instructions per upgrade.
    public func matches(path: Substring) -> Bool {
        let prefix: StaticString = "/rooms/"
        let wanted = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        return path.utf8.withContiguousStorageIfAvailable { $0.starts(with: wanted) } ?? path.utf8.starts(with: wanted)
    }

    public func makeSession(for request: HTTPRequest, from address: String, peer: WebSocketPeer) -> Result<any WebSocketSession, HTTPError> {
        let name = String(Substring(request.path.utf8.dropFirst(7)))  // after "/rooms/" (`matches`)
        guard Self.isValidRoomName(name) else {
            return .failure(HTTPError(.error(400, "room names are 1 to 64 characters of A-Z a-z 0-9 . _ - (not . or ..)")))
        }
        let query: Query
        do {
            query = try Query(request.query)
        } catch {
            return .failure(HTTPError(.error(400, error.message)))
        }
        let role: Role
        switch query["role"] {
        case nil, "follower": role = .follower
        case "presenter": role = .presenter
        case let other?: return .failure(HTTPError(.error(400, "role must be presenter or follower, not \(other.prefix(32))")))
        }
        var displayName = query["name"].map { DisplayName.clipped($0[...]) }
        var authorized = false
        switch authorize(request, query: query, room: name, role: role) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let claims?):
            authorized = true
            if let name = claims.name { displayName = name }
        case .success(nil): break
        }
        let followKey = query["followKey"].flatMap { $0.isEmpty ? nil : $0 }
        if let refusal = hub.admission(room: name, role: role, address: address, followKey: followKey, authorized: authorized) {
            return .failure(HTTPError(refusal))
        }
        let record: Bool
        switch query["record"] {
        case nil, "0", "false": record = false
        case "1", "true": record = true
        case let other?: return .failure(HTTPError(.error(400, "record must be 1 or 0, not \(other.prefix(32))")))
        }
        if record, role != .presenter { return .failure(HTTPError(.error(400, "only a presenter may ask to record the room (record=1)"))) }
        return .success(RoomMember(shared: shared, peer: peer, room: name, role: role, name: displayName, key: query["key"], address: address,
                                   followKey: followKey, authorized: authorized, record: record))
    }

    /// A follower for `peer` that is not a WebSocket (a terminal reader, `TTYEndpoint`),
    /// admitted as `makeSession` admits one.
    func member(on peer: WebSocketPeer, room: String, address: String, followKey: String?, authorized: Bool, name: String?) -> RoomMember {
        RoomMember(shared: shared, peer: peer, room: room, role: .follower, name: name, key: nil, address: address,
                   followKey: followKey, authorized: authorized)
    }

    /// The claims of the request's token (`token=` or `Authorization: Bearer`), nil when it
    /// gives none and none is required, or the refusal: 401 for no token or an invalid one,
    /// 403 for a valid token for another room or a lesser role.
    func authorize(_ request: HTTPRequest, query: Query, room: String, role: Role) -> Result<TokenClaims?, HTTPError> {
        let result = verifyToken(request, query: query, room: room, role: role)
        if case .failure = result { shared.counters?.refusalReasons.count(.token) }
        return result
    }

    private func verifyToken(_ request: HTTPRequest, query: Query, room: String, role: Role) -> Result<TokenClaims?, HTTPError> {
        let bearer = request.value(.authorization).flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        guard let token = query["token"] ?? bearer, !token.isEmpty else {
            guard !tokenRequired else {
                return .failure(HTTPError(.error(401, "this server admits room connections only with a signed token (token=… or Authorization: Bearer)",
                                                 headers: [("WWW-Authenticate", "Bearer")])))
            }
            return .success(nil)
        }
        guard let tokens else { return .failure(HTTPError(.error(401, "this server does not accept tokens (it has no auth.secret)"))) }
        switch tokens.verify(token, now: wallMilliseconds() / 1000) {
        case .failure(let error):
            return .failure(HTTPError(.error(error.status, error.message, headers: [("WWW-Authenticate", #"Bearer error="invalid_token""#)])))
        case .success(let claims):
            guard claims.covers(room: room) else { return .failure(HTTPError(.error(403, "the token is for room \(claims.room), not \(room)"))) }
            guard claims.allows(role) else { return .failure(HTTPError(.error(403, "the token lets its holder follow room \(room), not present it"))) }
            return .success(claims)
        }
    }

    /// 1–64 of `A–Z a–z 0–9 . _ -`, but not `.` or `..` (`RoomCore.isValidName`).
    static func isValidRoomName(_ name: String) -> Bool { RoomCore.isValidName(name) }
}

/// `application/x-www-form-urlencoded` query parameters (first value wins). A `%` not
/// followed by two hex digits, or a value that does not decode to UTF-8, is refused rather
/// than repaired: `a%zzb` must not match the key `ab`, nor `%ff` match `%80`.
struct Query {
    private var values: [String: String] = [:]

    /// Why a query is malformed (for the 400's body).
    struct Malformed: Error {
        let message: String
    }

    init(_ query: Substring) throws(Malformed) {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else { throw Malformed(message: "malformed percent-encoding in a query parameter name") }
            guard let value = parts.count > 1 ? Self.decode(parts[1]) : "" else {
                throw Malformed(message: "malformed percent-encoding in query parameter \(name.prefix(32))")
            }
            if values[name] == nil { values[name] = value }
        }
    }

    /// The first value given for `name`, if any (a request without parameters hashes no name).
    subscript(name: String) -> String? { values.isEmpty ? nil : values[name] }

    /// The decoded text, or nil for a bad `%` escape or bytes that are not UTF-8.
    static func decode(_ text: Substring) -> String? { QueryText.decode(text) }
}
