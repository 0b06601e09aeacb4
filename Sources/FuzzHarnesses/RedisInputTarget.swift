import Access
import RoomKit
import ScrollModel
import SyncServer

/// What a node reads from Redis (issue 26): pub/sub messages on a room's channel, and a room's
/// hash and node table.
extension FuzzTarget {
    /// The first byte picks the source. A message: what is accepted keeps every bound a
    /// client's message keeps (a state ScrollState.problem accepts, with progress and ends
    /// derived from its numbers; a document within the limit whose fingerprint is its text's;
    /// session ids; names within their limits; counts that cannot overflow a sum over any
    /// number of nodes), and the server's own encoding of it decodes to the same change.
    /// A snapshot (lines `field value`; `node NAME COUNTS`): every field taken keeps the same
    /// bounds, a key record is one a key can be checked against or the lock, nodes are bounded.
    static func redisInput(_ data: [UInt8]) throws(FuzzFinding) {
        guard let mode = data.first else { return }
        var limits = ClientMessage.Limits()
        limits.maxDocumentBytes = 4096
        let body = Array(data.dropFirst())
        if mode & 1 == 0 {
            guard case .success(let message?) = SharedInput.message(body, node: "00000000000000ff", limits: limits) else { return }
            try checkAccepted(message, limits: limits)
        } else {
            var hash = [String: [UInt8]]()
            var nodes = [(String, String)]()
            for line in body.split(separator: 10) {
                let parts = line.split(separator: 32, maxSplits: 1, omittingEmptySubsequences: false)
                let field = String(decoding: parts[0], as: UTF8.self)
                let value = parts.count > 1 ? Array(parts[1]) : []
                if field == "node" {
                    let entry = value.split(separator: 32, maxSplits: 1, omittingEmptySubsequences: false)
                    nodes.append((String(decoding: entry[0], as: UTF8.self), entry.count > 1 ? String(decoding: entry[1], as: UTF8.self) : ""))
                } else {
                    hash[field] = value
                }
            }
            let now = 1_800_000_000_000
            let holder = hash["lease"].map { String(decoding: $0, as: UTF8.self) }
            let (snapshot, _) = SharedInput.snapshot(hash: hash, leaseHolder: holder, nodes: nodes, node: "00000000000000ff", now: now, limits: limits)
            try expect((0...SharedInput.maxVersion).contains(snapshot.version), "version \(snapshot.version)")
            if let state = snapshot.state { try checkAccepted(.change(version: 1, .state(state)), limits: limits) }
            if let document = snapshot.document { try checkAccepted(.change(version: 1, .document(document)), limits: limits) }
            if let key = snapshot.keyDigest { try expect(PresenterKey.isValid(key) || key == PresenterKey.unreadable, "key record \(key.prefix(80))") }
            if let record = snapshot.followKey { try expect(FollowKey.isValid(record) || record == FollowKey.unreadable, "follow key \(record.prefix(80))") }
            try expect(snapshot.driver.map { SessionID($0) != nil } ?? true, "driver \(snapshot.driver!.prefix(40))")
            try expect(snapshot.driverName.map(DisplayName.isValid) ?? true, "driver name of \(snapshot.driverName!.utf8.count) bytes")
            try expect(snapshot.nodes.count <= SharedInput.maxNodes, "\(snapshot.nodes.count) nodes")
            for (name, presence) in snapshot.nodes {
                try checkAccepted(.presence(node: name, presence), limits: limits)
            }
        }
    }

    private static func checkAccepted(_ message: SharedInput.Message, limits: ClientMessage.Limits) throws(FuzzFinding) {
        switch message {
        case .presence(let node, let presence):
            try expect(SessionID(node) != nil, "node \(node.prefix(40))")
            let counts = [presence.presenters, presence.followers, presence.detached]
            try expect(counts.allSatisfy { (0...Presence.maxNodeCount).contains($0) } && presence.detached <= presence.followers, "counts \(counts)")
            let total = (0..<SharedInput.maxNodes).reduce(Presence()) { sum, _ in sum.adding(presence) }
            try expect(total.followers >= presence.followers, "the sum over nodes wrapped")
        case .led(let state):
            try checkAccepted(.change(version: 1, .state(state)), limits: limits)
        case .stateWanted(let node):
            try expect(SessionID(node) != nil, "node \(node.prefix(40))")
        case .change(let version, let change):
            try expect((1...SharedInput.maxVersion).contains(version), "version \(version)")
            let encoded: [UInt8]
            switch change {
            case .state(let state):
                if let problem = state.problem(limits: limits) { throw FuzzFinding("an accepted state fails the protocol's check: \(problem)") }
                try expect(state.seq <= SharedChange.maxSeq && SessionID(state.by) != nil, "seq \(state.seq) or by \(state.by.prefix(40))")
                let update = ScrollUpdate(offset: state.offset, viewport: state.viewport, content: state.content, anchor: state.anchor, t: state.t)
                let derived = ScrollState.next(after: nil, applying: update, by: state.by, doc: state.doc)
                try expect(derived.progress == state.progress && derived.atTop == state.atTop && derived.atBottom == state.atBottom,
                           "progress or ends not derived from the numbers")
                encoded = ServerMessage.state(state)
            case .document(let document):
                try expect(document.text.utf8.count <= limits.maxDocumentBytes, "a document of \(document.text.utf8.count) bytes")
                try expect(document.fingerprint == Fingerprint.of(document.text), "the fingerprint is not the text's")
                try expect(SessionID(document.by) != nil && document.name.utf8.count <= limits.maxNameBytes, "by or name")
                encoded = ServerMessage.document(document)
            case .driver(let driver, let name):
                try expect(name.map(DisplayName.isValid) ?? true, "a driver name of \(name!.utf8.count) bytes")
                try expect(driver != nil || name == nil, "a name without a driver")
                encoded = ServerMessage.driver(driver?.description, name: name)
            case .access(let record):
                try expect(record.map { FollowKey.isValid($0) || $0 == FollowKey.unreadable } ?? true, "a follow key record that cannot be checked")
                encoded = SharedChange.access(followKey: record)
            case .presenterKey(let record):
                try expect(PresenterKey.isValid(record) || record == PresenterKey.unreadable, "a presenter key record that cannot be checked")
                encoded = SharedChange.key(record: record)
            }
            let again = SharedInput.message(Array("1 ".utf8) + encoded, node: "00000000000000ff", limits: limits)
            try expect(again == .success(.change(version: 1, change)), "the server's encoding of an accepted change decodes differently")
        }
    }
}
