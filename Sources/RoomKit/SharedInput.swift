import ScrollModel

/// What a node reads from Redis, decoded and checked: pub/sub messages on a room's channel
/// and the room's hash and node table. Any client of that Redis can write them, so they pass
/// the same checks as what a client sends (`SharedChange`) and bounds on every number; what
/// fails is refused with the reason, never applied, never forwarded. Pure: no I/O, no clock.
public enum SharedInput {
    /// A message on a room's channel.
    public enum Message: Equatable, Sendable {
        /// A change with the room's version (one more per change).
        case change(version: Int, SharedChange)
        /// Another node's member counts.
        case presence(node: String, Presence)
        /// A state the lease holder's node ordered and published itself (`S MESSAGE`): no
        /// version; taken where it is by the room's driver and newer than the room's.
        case led(ScrollState)
        /// A node fetched the room (`Q NODE`): the lease holder's node publishes its newest
        /// state again, which the room's hash may not hold yet.
        case stateWanted(node: String)
    }

    /// Why something read from Redis was refused.
    public struct Refusal: Error, Equatable, Sendable {
        public enum Reason: String, CaseIterable, Sendable {
            /// Not a message any node publishes.
            case malformed
            /// A change that fails the protocol's validation.
            case invalid
            /// A version or seq that cannot follow the room's (reconciled from its hash).
            case implausible
            /// A room hash or node table entry that fails validation.
            case snapshot
            /// A control change the room's lease (and version) in Redis does not confirm.
            case unconfirmed
            /// Not signed with `redis.secret`, or signed with another.
            case unsigned
        }

        public let reason: Reason
        public let detail: String

        package init(reason: Reason, detail: String) {
            self.reason = reason
            self.detail = detail
        }
    }

    /// The largest version a room's hash may hold (it counts changes: far beyond any room's life).
    public static let maxVersion = SharedChange.maxSeq

    /// Decodes `VERSION MESSAGE`, `S STATE`, `Q NODE` or `P NODE PRESENTERS FOLLOWERS DETACHED`.
    /// `node` is this node's id: its own counts come back too and are ignored (nil).
    public static func message(_ payload: [UInt8], node: String, limits: ClientMessage.Limits) -> Result<Message?, Refusal> {
        guard let space = payload.firstIndex(of: UInt8(ascii: " ")) else {
            return .failure(Refusal(reason: .malformed, detail: "no space in a message of \(payload.count) bytes"))
        }
        let head = payload[..<space]
        if head.elementsEqual("P".utf8) {
            let fields = payload[(space + 1)...].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
            guard fields.count == 4, let nodeID = SessionID(String(decoding: fields[0], as: UTF8.self)) else {
                return .failure(Refusal(reason: .malformed, detail: "presence needs a node id and three counts"))
            }
            guard let presence = Presence(reported: fields.dropFirst().map { Substring(String(decoding: $0, as: UTF8.self)) }) else {
                return .failure(Refusal(reason: .invalid, detail: "presence counts must be whole numbers from 0 to \(Presence.maxNodeCount), detached ≤ followers"))
            }
            let name = nodeID.description
            return .success(name == node ? nil : .presence(node: name, presence))
        }
        if head.elementsEqual("Q".utf8) {
            guard let asker = SessionID(String(decoding: payload[(space + 1)...], as: UTF8.self)) else {
                return .failure(Refusal(reason: .malformed, detail: "Q needs a node id"))
            }
            let name = asker.description
            return .success(name == node ? nil : .stateWanted(node: name))
        }
        if head.elementsEqual("S".utf8) {
            do throws(ProtocolError) {
                guard case .state(let state) = try SharedChange.decode(Array(payload[(space + 1)...]), limits: limits) else {
                    return .failure(Refusal(reason: .malformed, detail: "S carries only a state"))
                }
                return .success(.led(state))
            } catch {
                return .failure(Refusal(reason: .invalid, detail: error.message))
            }
        }
        guard let version = integer(head, in: 1...maxVersion) else {
            return .failure(Refusal(reason: .malformed, detail: "the version must be an integer from 1 to 2^53"))
        }
        do throws(ProtocolError) {
            var change = try SharedChange.decode(Array(payload[(space + 1)...]), limits: limits)
            // A follow key record that cannot be read keeps the room private, never opens it.
            if case .access(let record?) = change, !KeyRecord.isFollowKey(record) { change = .access(followKey: KeyRecord.unreadable) }
            // A presenter key record that cannot be read locks the room to presenters, never opens it.
            if case .presenterKey(let record) = change, !KeyRecord.isPresenterKey(record) { change = .presenterKey(KeyRecord.unreadable) }
            return .success(.change(version: version, change))
        } catch {
            return .failure(Refusal(reason: .invalid, detail: error.message))
        }
    }

    /// A room as its hash (`HGETALL`), lease holder and node table say, checked field by
    /// field. A field that fails is left out and named in `refused` (a key digest that fails
    /// locks the room: it never becomes keyless). `now` is the wall clock in ms.
    public static func snapshot(hash: [String: [UInt8]], leaseHolder: String?, nodes: [(String, String)], node: String, now: Int,
                         limits: ClientMessage.Limits) -> (snapshot: RoomSnapshot, refused: [String]) {
        var snapshot = RoomSnapshot()
        var refused = [String]()
        if let text = hash["ver"] {
            if let version = integer(text[...], in: 0...maxVersion) { snapshot.version = version } else { refused.append("ver") }
        }
        if let text = hash["seq"] {
            if let seq = integer(text[...], in: 0...SharedChange.maxSeq) { snapshot.seq = seq } else { refused.append("seq") }
        }
        if let seq = hash["seq"], let suffix = hash["suf"], !suffix.isEmpty {
            switch message(Array("1 ".utf8) + statePrefix + seq + suffix, node: node, limits: limits) {
            case .success(.change(_, .state(let state))?): snapshot.state = state
            default: refused.append("seq/suf")
            }
        }
        if let text = hash["doc"], !text.isEmpty {
            switch message(Array("1 ".utf8) + text, node: node, limits: limits) {
            case .success(.change(_, .document(let document))?): snapshot.document = document
            default: refused.append("doc")
            }
        }
        if let text = hash["key"], !text.isEmpty {
            let digest = String(decoding: text, as: UTF8.self)
            if KeyRecord.isPresenterKey(digest) { snapshot.keyDigest = digest } else {
                snapshot.keyDigest = KeyRecord.unreadable
                refused.append("key")
            }
        }
        if let text = hash["fkey"], !text.isEmpty {
            let record = String(decoding: text, as: UTF8.self)
            if KeyRecord.isFollowKey(record) { snapshot.followKey = record } else {
                snapshot.followKey = KeyRecord.unreadable
                refused.append("fkey")
            }
        }
        // A lease that lapsed without a node saying so yet (`lapse`): the hash's driver is the
        // one the nodes that hold the room still show; a fetching node agrees with them (and
        // asks for the newest) until the change is ordered (docs/cluster.md, divergence 6).
        let hashDriver = hash["driver"].map { String(decoding: $0, as: UTF8.self) }
        if let holder = leaseHolder.flatMap({ $0.isEmpty ? nil : $0 }) ?? hashDriver, !holder.isEmpty {
            if let id = SessionID(holder) {
                snapshot.driver = id.description
                if let driver = hash["driver"], String(decoding: driver, as: UTF8.self) == holder,
                   let name = hash["dname"].map({ String(decoding: $0, as: UTF8.self) }), !name.isEmpty {
                    if DisplayName.isValid(name) { snapshot.driverName = name } else { refused.append("dname") }
                }
            } else {
                refused.append("lease")
            }
        }
        let lifetime = SharedTiming.presenceLifetimeMilliseconds
        for (name, value) in nodes where name != node {
            guard let id = SessionID(name), snapshot.nodes.count < maxNodes else { refused.append("nodes"); continue }
            let fields = value.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 4, let presence = Presence(reported: fields.prefix(3)),
                  let said = integer(Array(fields[3].utf8)[...], in: 0...Int(1) << 50) else { refused.append("nodes"); continue }
            // Counts said too long ago are a dead node's; counts from the future are refused.
            guard said > now - lifetime, said <= now + lifetime else { continue }
            snapshot.nodes[id.description] = presence
        }
        return (snapshot, refused)
    }

    /// Why the room's lease and hash, read after a control change was heard, do not confirm
    /// it, or nil: a node's script moves the lease, sets the driver's name and counts the
    /// version together, so the lease must name the change's driver (none: no lease), the hash
    /// its name, and the room's version must have reached the change's. A later change may
    /// have moved the lease on meanwhile: that one comes next, and the gap fetches the room.
    public static func confirm(driver: SessionID?, name: String?, version: Int, lease: String, hashVersion: Int,
                               driverName: String) -> Refusal? {
        guard hashVersion >= version else {
            return Refusal(reason: .unconfirmed, detail: "a control change under version \(version), which the room (at \(hashVersion)) never ordered")
        }
        guard lease == (driver?.description ?? "") else {
            return Refusal(reason: .unconfirmed, detail: "a control change the room's lease does not name")
        }
        guard driver == nil || (name ?? "") == driverName else {
            return Refusal(reason: .unconfirmed, detail: "a driver's name the room does not hold")
        }
        return nil
    }

    /// Other nodes counted per room: far more than any deployment runs, few enough that a
    /// writer to Redis cannot grow a room's table without bound.
    public static let maxNodes = 256

    /// A decimal integer of at most 16 digits within `range`, or nil.
    package static func integer(_ bytes: ArraySlice<UInt8>, in range: ClosedRange<Int>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 16, bytes.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let value = bytes.reduce(0) { $0 * 10 + Int($1 - 48) }
        return range.contains(value) ? value : nil
    }
}

extension SharedChange {
    /// What a change says, in one number (a document by its fingerprint, name and author, not
    /// its text): two changes under one version that differ here are not a repeat.
    package var digest: Int {
        var hasher = Hasher()
        switch self {
        case .state(let state):
            hasher.combine(0)
            hasher.combine(state)
        case .driver(let driver, let name):
            hasher.combine(1)
            hasher.combine(driver)
            hasher.combine(name)
        case .document(let document):
            hasher.combine(2)
            hasher.combine(document.fingerprint)
            hasher.combine(document.name)
            hasher.combine(document.by)
            hasher.combine(document.format)
        case .access(let record):
            hasher.combine(3)
            hasher.combine(record)
        case .presenterKey(let record):
            hasher.combine(4)
            hasher.combine(record)
        }
        return hasher.finalize()
    }
}
