import RoomKit
import ScrollModel

/// What a node reads on its rooms' channels: checked (`SharedInput`, and the signature with
/// `redis.secret`), then handed to the hub in the order it came. A control change waits for
/// the room's lease to confirm it (`confirm`), and what the room's channel brings meanwhile
/// waits behind it.
extension RedisRoomEngine {
    /// A snapshot came (see `SnapshotWait`): the hub takes it, then, after the room's last
    /// answer, the changes heard meanwhile that are newer.
    package func answered(_ room: String, _ snapshot: RoomSnapshot?, _ reply: (RoomSnapshot?) -> Void) {
        var wait = attaching.removeValue(forKey: room) ?? SnapshotWait()
        let (taken, then, over) = wait.answered(snapshot, seqNow: seqClock())
        if !over { attaching[room] = wait }
        reply(taken)
        for (version, change) in then { deliver(room, version: version, change) }
    }

    package func received(channel: ArraySlice<UInt8>, payload: [UInt8]) {
        let prefix = Self.channelPrefix.utf8
        guard channel.count > prefix.count + 1, channel.starts(with: prefix), channel.last == UInt8(ascii: "}") else { return }
        let room = String(decoding: channel.dropFirst(prefix.count).dropLast(), as: UTF8.self)
        counters.messagesIn.add(1, ordering: .relaxed)
        var payload = payload
        if let signer {
            switch signer.verify(channel: Self.roomKey(room), payload: payload) {
            case .failure(let refusal): return refused(refusal, room: room)
            case .success(let message): payload = Array(message)
            }
        } else if payload.first == UInt8(ascii: "!"), let space = payload.firstIndex(of: UInt8(ascii: " ")) {
            payload.removeSubrange(...space)  // signed by a node with a secret this one does not have
        }
        switch SharedInput.message(payload, node: node, limits: limits) {
        case .failure(let refusal):
            refused(refusal, room: room)
        case .success(nil):
            break
        case .success(.presence(let from, let presence)?):
            delegate?.shared(room: room, node: from, presence: presence)
        case .success(.change(let version, let change)?):
            if attaching[room] != nil {
                attaching[room]?.hear(version: version, change)
            } else {
                deliver(room, version: version, change)
            }
        case .success(.led(let state)?):
            if attaching[room] != nil {
                attaching[room]?.hear(version: nil, .state(state))
                if let wanted = newestWanted[room], wanted.snapshot.driver == state.by { settle(room) }
            } else {
                deliver(room, version: nil, .state(state))
            }
        case .success(.stateWanted?):
            // While the room is fetched (or merged), a question waits with the changes heard
            // meanwhile and is answered after them, from what the room then holds (seed 40989
            // with Redis stops: a fetching node's room was not held yet and dropped it, though
            // that node alone had heard the newest place).
            if attaching[room] != nil {
                attaching[room]?.hear(version: nil, nil)
            } else {
                deliver(room, version: nil, nil)
            }
        }
    }

    /// Hands a change (`version` nil: a led state; `change` nil: a node's `Q`) to the hub,
    /// behind a control change being confirmed; a control change is confirmed first. A `Q` is
    /// answered in channel order too, from the state the changes before it made (seed 31013: a
    /// node that woke from a pause answered with the state it held before the driver's last
    /// one, which waited behind the driver change's confirmation, and no node asked again).
    package func deliver(_ room: String, version: Int?, _ change: SharedChange?) {
        if !confirming.isEmpty, confirming[room] != nil {
            guard confirming[room]!.count < Self.maxWaitingBehindConfirmation else {
                return refused(SharedInput.Refusal(reason: .implausible, detail: "too many changes while a control change is confirmed"), room: room)
            }
            confirming[room]!.append((version, change))
            return
        }
        guard let change else { return delegate?.sharedStateWanted(room: room) ?? () }
        guard let version else {
            if case .state(let state) = change { delegate?.shared(room: room, led: state) }
            return
        }
        if case .driver(let driver, let name) = change { return confirm(room, version: version, driver: driver, name: name) }
        delegate?.shared(room: room, version: version, change: change)
    }

    /// Changes that may wait behind one control change being confirmed (a round trip): far
    /// more than a room makes in that time; past it, a publisher floods the channel.
    package static let maxWaitingBehindConfirmation = 4096

    /// Reads the room's lease, version and driver's name, and hands the control change on
    /// only if they confirm it (`SharedInput.confirm`): anyone who can publish could have sent
    /// it, but only a node's script moves the lease. Then what waited behind it goes on.
    private func confirm(_ room: String, version: Int, driver: SessionID?, name: String?) {
        confirming[room] = []
        let k = keys(room)
        commands.send(["EVAL", Scripts.lease, "2", k.hash, k.lease]) { [self] answer in
            let parts = answer.elements
            if !answer.isError, parts.count == 3 {
                let hashVersion = parts[1].text.flatMap { SharedInput.integer(Array($0.utf8)[...], in: 0...SharedInput.maxVersion) }
                if let refusal = SharedInput.confirm(driver: driver, name: name, version: version, lease: parts[0].text ?? "",
                                                     hashVersion: hashVersion ?? 0, driverName: parts[2].text ?? "") {
                    refused(refusal, room: room)
                    // Under a version the room holds: overtaken (the lease moved on before this
                    // node heard it), so this node missed what followed (seed 31637).
                    if hashVersion ?? 0 >= version { delegate?.sharedChangesMissed(room: room) }
                } else {
                    delegate?.shared(room: room, version: version, change: .driver(driver, name: name))
                }
            }
            // (Redis did not answer: the change is not taken; the room is merged when it is back.)
            let waiting = confirming.removeValue(forKey: room) ?? []
            for (version, change) in waiting { deliver(room, version: version, change) }
        }
    }

    /// Counts a refused input and logs it, at most once per 10 s with how many more there were
    /// (a burst writes one line, not one per message). What was read is logged only escaped.
    public func refused(_ refusal: SharedInput.Refusal, room: String) {
        counters.refused[refusal.reason]?.add(1)
        if let loggedAt = refusalLoggedAt, loop.now - loggedAt < 10_000_000_000 {
            refusalsUnlogged += 1
            return
        }
        logger.warning("refused what redis holds for a room", metadata: [
            "room": "\(room.prefix(80))", "reason": "\(refusal.reason.rawValue)", "detail": "\(refusal.detail.prefix(200))",
            "alsoRefusedSinceLastLine": "\(refusalsUnlogged)",
        ])
        refusalLoggedAt = loop.now
        refusalsUnlogged = 0
    }

    /// `message` as this node publishes it on `channel`: signed with `redis.secret`, if set.
    package func signed(_ message: [UInt8], channel: String) -> [UInt8] {
        guard let signer else { return message }
        return signer.tag(channel: channel, message: message) + message
    }

    /// The key a script signs `message` with (empty without `redis.secret`).
    package func scriptKey(_ message: some Collection<UInt8>, channel: String) -> [UInt8] {
        signer.map { Array($0.key(channel: channel, message: message).utf8) } ?? []
    }
}
