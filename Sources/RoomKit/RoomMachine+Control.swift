import ScrollModel

/// A take, or a new room's first claim, on a node that shares the room: the outcome is known
/// only when the engine's `driver` change comes back in channel order. Until then the taker's
/// scroll waits here and a presenter's join waits for its claim, so that a cluster behaves as
/// one node: `take` then `scroll` at once is applied, and the first presenter's welcome names
/// it driver (docs/cluster.md, divergence 3).
extension RoomMachine {
    /// A take or a claim of `id` on its way: the version the engine ordered it under (nil: not
    /// answered yet), and what waits for it (the taker's newest scroll, or the join).
    package struct ControlWait {
        package var ticket: Int
        package var id: SessionID
        package var version: Int?
        /// A presenter's join waits for this claim.
        package var joining: Bool
        /// The taker, to answer (nil for a join's claim: not a member yet).
        package var sender: Sender?
        package var held: ScrollUpdate?
    }

    /// Sends `action` for `id` to the engine, waiting for its outcome (`ControlWait`).
    mutating func orderControl(_ action: ControlAction, for id: SessionID, sender: Sender?) -> [Effect] {
        nextControlTicket += 1
        controlWaits.append(ControlWait(ticket: nextControlTicket, id: id, joining: sender == nil, sender: sender))
        return [.orderControl(action, ticket: nextControlTicket)]
    }

    /// A presenter who may join a shared room nobody drives claims control first (nil: it joins
    /// now), and joins once the claim's outcome is known here (`continueJoin`): its welcome
    /// then names the driver. A key it would bind to the keyless room goes to the engine
    /// before the claim, so that no node sees the room driven and keyless meanwhile.
    mutating func claimBeforeJoin(_ request: JoinRequest, record: String?) -> [Effect]? {
        guard request.role == .presenter, core.driver == nil, !request.afterClaim,
              core.presenterRefusal(key: record, keyRequired: request.keyRequired, authorized: request.authorized,
                                    setsFollowKey: request.newFollowKey != nil) == nil else { return nil }
        let claim = orderControl(.claim(session: request.id.description, name: request.name), for: request.id, sender: nil)
        guard !request.authorized, let record, !record.isEmpty, !core.hasPresenterKey, core.presence.presenters == 0 else { return claim }
        return [.bindKey(record)] + claim
    }

    /// A scroll from a member whose take is on its way waits for its outcome (the newest
    /// replaces the one waiting); false if none is.
    mutating func holdForTake(_ update: ScrollUpdate, from id: SessionID, sender: Sender) -> Bool {
        guard let index = controlWaits.firstIndex(where: { $0.id == id && !$0.joining }) else { return false }
        controlWaits[index].held = update
        controlWaits[index].sender = sender
        return true
    }

    mutating func controlAnswered(_ ticket: Int, _ result: EngineResult, _ context: Context) -> [Effect] {
        guard let index = controlWaits.firstIndex(where: { $0.ticket == ticket }) else { return [] }
        var effects: [Effect] = []
        switch result {
        case .ordered(let version):
            controlWaits[index].version = version  // done when the room reaches it (`afterStep`)
        case .done:
            let wait = controlWaits.remove(at: index)
            finish(wait, settled: false, &effects)
        case .refused(let error):
            var wait = controlWaits.remove(at: index)
            if let sender = wait.sender {
                effects.append(.refuse(error, to: sender))
                if wait.held != nil {
                    wait.held = nil
                    effects.append(.refuse(ProtocolError(.notDriver, "your take was refused (\(error.message)); this scroll was dropped"), to: sender))
                }
            }
            finish(wait, &effects)
        case .unavailable:
            // The engine went away with the take on its way: taken here, as while it is away.
            let wait = controlWaits.remove(at: index)
            if let sender = wait.sender, core.members[wait.id] != nil {
                effects = receive(.control(take: true), from: wait.id, sender: sender, context)
            }
            finish(wait, settled: false, &effects)  // (Redis may still run it, if it was only slow)
        }
        return effects
    }

    /// After each step: the waits whose change the room now holds (its version reached theirs).
    mutating func finishReachedControlWaits(_ effects: inout [Effect]) {
        while let index = controlWaits.firstIndex(where: { $0.version.map { $0 <= version } == true }) {
            let wait = controlWaits.remove(at: index)
            finish(wait, &effects)
        }
    }

    /// Every wait the engine answered ends (a merge's answer says who leads, whatever version
    /// Redis counts now). One not answered yet was sent after the merge (on the same link, so
    /// its answer comes after the merge's and counts the merged room's versions): it waits on
    /// (a take during the merge by the driver shown here alone: its held scroll goes once the
    /// take is applied, not at the merge, where another driver may be named).
    mutating func finishControlWaits(_ effects: inout [Effect]) {
        let waits = controlWaits
        controlWaits = waits.filter { $0.version == nil && !$0.joining }
        for wait in waits where wait.version != nil || wait.joining { finish(wait, settled: wait.version != nil, &effects) }
    }

    /// What waited goes: the held scroll again, as its sender's (refused then if the take
    /// lost), the join. `settled`: the outcome is known here (refused, or the room holds the
    /// change); otherwise (no answer in time, the engine away, a merge first) the lease may be
    /// the session's all the same. A taker who left meanwhile gives back control it won or may
    /// have won (the release goes after the take, on the same link: Redis runs it second, and
    /// it does nothing if the lease is another's); a joining presenter's claim is remembered
    /// until it leaves (`unsettledClaims`).
    mutating func finish(_ wait: ControlWait, settled: Bool = true, _ effects: inout [Effect]) {
        if wait.joining {
            if !settled, !unsettledClaims.contains(wait.id) { unsettledClaims.append(wait.id) }
            return effects.append(.continueJoin(ticket: wait.ticket))
        }
        guard core.members[wait.id] != nil else {
            if core.driver == wait.id || !settled { effects.append(.releaseControl(wait.id)) }
            return
        }
        if let update = wait.held, let sender = wait.sender { effects.append(.resend(.scroll(update), from: sender)) }
    }

    /// Whether `id`, leaving or not joining after all, may hold the lease through this node: it
    /// is the driver here, or its claim's outcome was never learned here (forgotten now). Its
    /// node then releases (a release that finds the lease another's does nothing).
    mutating func giveBackClaim(of id: SessionID) -> Bool {
        let unsettled = unsettledClaims.firstIndex(of: id).map { unsettledClaims.remove(at: $0) } != nil
        return core.driver == id || unsettled
    }
}

extension RoomMachine.ControlWait: Sendable where Sender: Sendable {}
