import Access
import RedisClient
import RoomKit
import ScrollModel

/// After an outage: what a room did on this node alone is merged into the shared room (the
/// `reconcile` script), and what Redis holds comes back as a snapshot; also how a fetch or a
/// merge's reply is read and settled (docs/cluster.md §5).
extension RedisRoomEngine {
    public func reconcile(room: String, local: RoomSnapshot, reply: @escaping @Sendable (RoomSnapshot?) -> Void) {
        loop.execute { [self] in
            subscribe(room) { [self] subscribed in
                guard subscribed else { return reply(nil) }
                merge(room, local: local, reply: reply)
            }
        }
    }

    /// The `reconcile` script with what this room did here alone; it publishes only this node's
    /// own (signed with `redis.secret`, by keys made here), never the hash's state.
    private func merge(_ room: String, local: RoomSnapshot, reply: @escaping @Sendable (RoomSnapshot?) -> Void) {
        attaching[room, default: SnapshotWait()].asked()
        let k = keys(room)
        // Published (when the merge keeps the local driver) under that driver, as `leadAgain`
        // orders it: a driver who has not moved passes on its predecessor's place (I5). Written
        // as the hash's base (when another holds the lease) as it was ordered: under another
        // `by` at its own `seq` it was a second state under that `seq` (docs/cluster.md §7.15).
        var published = local.state
        if let driver = local.driver { published?.by = driver }
        let suffix = published.map(stateSuffix) ?? []
        let asOrdered = local.state.map(stateSuffix) ?? []
        let driverMessage = local.driver.map { ServerMessage.driver($0, name: local.driverName) } ?? []
        let document = local.document.map { ServerMessage.document($0) } ?? []
        let access: [UInt8] = local.followKey.map { SharedChange.access(followKey: $0) } ?? []
        let key: [UInt8] = local.keyDigest.map { SharedChange.key(record: $0) } ?? []
        let signing = signer == nil ? [[UInt8]](repeating: [], count: 3)
            : [scriptKey(driverMessage, channel: k.channel), scriptKey(document, channel: k.channel),
               scriptKey(statePrefix + suffix, channel: k.channel)]
        commands.send(["EVAL", scripts.reconcile, "3", k.hash, k.lease, k.nodes, local.driver ?? "", local.driverName ?? "",
                       String(local.state?.seq ?? 0)].map { Array($0.utf8) }
                      + [suffix, Array(k.channel.utf8), Array(String(leaseMilliseconds).utf8), Array(String(roomIdleMilliseconds).utf8),
                         driverMessage, document, Array((local.keyDigest ?? "").utf8), Array((local.followKey ?? "").utf8)] + signing
                      + [Array(String(seqClock()).utf8), asOrdered == suffix ? [] : asOrdered, access, scriptKey(access, channel: k.channel),
                         key, scriptKey(key, channel: k.channel)]) { [self] answer in
            settle(room)  // a fetch of the same room waiting for the newest state answers first (it ran first)
            let snapshot = answer.isError ? nil : snapshotFrom(answer, room: room)
            answered(room, snapshot, reply)
            // As after a fetch: a room's newest state may not be in its hash yet (written back
            // every 250 ms, and a merge publishes only its driver's); the nodes that hold the
            // room publish theirs (the lease holder's ordered again), driven or not.
            if snapshot != nil {
                askNewest(channel: k.channel)
            }
        }
    }

    /// The wait for the newest state is over (an answer came, or the time is up).
    package func settle(_ room: String) {
        guard let (snapshot, reply) = newestWanted.removeValue(forKey: room) else { return }
        answered(room, snapshot, reply)
    }

    func snapshotFrom(_ answer: RedisReply, room: String) -> RoomSnapshot? {
        let parts = answer.elements
        guard parts.count == 3 else { return nil }
        var fields = [String: [UInt8]]()
        let flat = parts[0].elements
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            if let name = flat[index].text, case .string(let value) = flat[index + 1] { fields[name] = value }
        }
        var nodes = [(String, String)]()
        let table = parts[2].elements
        for index in stride(from: 0, to: table.count - 1, by: 2) {
            if let name = table[index].text, let value = table[index + 1].text { nodes.append((name, value)) }
        }
        let (snapshot, refusedFields) = SharedInput.snapshot(hash: fields, leaseHolder: parts[1].text, nodes: nodes, node: node,
                                                             now: wallClock(), limits: limits)
        if !refusedFields.isEmpty {
            refused(SharedInput.Refusal(reason: .snapshot, detail: "fields \(refusedFields.joined(separator: ", ")) fail validation"), room: room)
        }
        return snapshot
    }
}
