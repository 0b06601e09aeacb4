package import Access
import Logging
import ScrollModel
import Transport
import WebSocketCore

/// Server-side recording (Protocol/RECORDING.md): a room is recorded from the moment a
/// presenter asks (`record=1`, `present --record`) or from its first member when every room
/// is (`rooms.record`); every state, document and driver it sends is added as members got it,
/// kept with the room (and its files, with the embedded store), and served at
/// `GET /rooms/NAME/recording` to its presenter (key), the operator (admin token) or, in a
/// private room, whoever has its follow key.
extension LocalRoomHub {
    /// Starts recording the room if it is not yet, paid by `address` (who asked): the header
    /// holds its document, and its state and driver are the first events (a recording started
    /// mid-talk plays from there). Returns why it could not start, if it could not.
    func startRecording(in guarded: inout Room.Guarded, room: Room, now: UInt64, address: String) -> String? {
        guard guarded.recording == nil else { return nil }
        let header = Recording.Header(room: room.name, started: utcTimestamp(),
                                      url: "\(publicURL.value)/rooms/\(room.name)", document: guarded.core.document)
        let ticket = recordingBytes.ticket(room: room.name, address: address)
        ticket.presented.store(guarded.presence.presenters > 0, ordering: .relaxed)
        var recording: RoomRecording
        do {
            recording = try RoomRecording(header: header, now: now, limit: options.recordingBytes, budget: recordingBytes, ticket: ticket)
        } catch {
            recordingBytes.end(ticket)
            refusals.count(.recordingBudget)
            logger.warning("room not recorded", metadata: ["room": "\(room.name)", "address": "\(address)", "reason": "\(error.message)"])
            return "this room is not recorded: \(error.message)"
        }
        if let state = guarded.core.state { _ = recording.append(ServerMessage.state(state), now: now, budget: recordingBytes) }
        if let driver = guarded.core.driver {
            _ = recording.appendDriver(ServerMessage.driver(driver.description, name: guarded.core.driverName), now: now, budget: recordingBytes)
        }
        guarded.recording = recording
        counters.recordingsStarted.add(1, ordering: .relaxed)
        logger.info("recording started", metadata: ["room": "\(room.name)"])
        if let chunk = guarded.recording?.takeUnsaved() { recordingFiles?.append(chunk, room: room.name) }
        return nil
    }

    /// What a presenter's welcome says of the room's recording (`recording`, and why it is not
    /// kept), or nil when it is not recorded and nobody asked.
    func recordingNote(_ guarded: Room.Guarded, asked: Bool, problem: String?) -> (state: String, problem: String?)? {
        guard let recording = guarded.recording else { return asked ? ("refused", problem) : nil }
        if let stopped = recording.stopped { return ("stopped", "this room's recording stopped: \(stopped)") }
        return ("on", nil)
    }

    /// The room's recording learns whether anyone presents in it (on any node): a room nobody
    /// presents in gives its recording's bytes up first when the budget is full.
    func notePresenters(_ guarded: inout Room.Guarded) {
        guarded.recording?.ticket.presented.store(guarded.presence.presenters > 0, ordering: .relaxed)
    }

    /// Rooms whose recordings the budget dropped for a presented room forget them (each tick).
    func forgetDroppedRecordings() {
        for name in recordingBytes.takeDropped() {
            guard let room = rooms.withLock({ $0[name] }) else { continue }
            room.guarded.withLock { guarded in
                guard guarded.recording?.ticket.dropped.load(ordering: .relaxed) == true else { return }
                dropRecording(in: &guarded, room: name)
                logger.info("recording dropped: the recordings' budget went to a room with a presenter", metadata: ["room": "\(name)"])
            }
        }
    }

    /// Adds a message the room sends to its recording, if it is recorded (`driver`: a
    /// `driver` message, left out when it repeats the last).
    @inline(__always)
    func record(_ message: [UInt8], in guarded: inout Room.Guarded, room: Room, now: UInt64, driver: Bool = false) {
        guard guarded.recording != nil else { return }
        let kept = driver ? guarded.recording?.appendDriver(message, now: now, budget: recordingBytes)
                          : guarded.recording?.append(message, now: now, budget: recordingBytes)
        if kept == false {
            counters.recordingsStopped.add(1, ordering: .relaxed)
            logger.warning("recording stopped", metadata: ["room": "\(room.name)", "reason": "\(guarded.recording?.stopped ?? "")"])
        }
        if let chunk = guarded.recording?.takeUnsaved() { recordingFiles?.append(chunk, room: room.name) }
    }

    /// A restored room's recording, read back and checked as a file from outside, and held to
    /// the limits a recording grows under (a room's, and all rooms' together: past that, it is
    /// not restored and its file goes).
    func restoreRecording(in guarded: inout Room.Guarded, room name: String, now: UInt64) {
        guard let files = recordingFiles,
              let (bytes, lastSeconds) = files.load(name, limits: options.messageLimits, atMost: options.recordingBytes) else { return }
        // Whoever asked for it is not known any more: it is its own address's.
        let ticket = recordingBytes.ticket(room: name, address: "(restored \(name))")
        ticket.presented.store(false, ordering: .relaxed)
        if let refusal = recordingBytes.reserve(bytes.count, for: ticket) {
            recordingBytes.end(ticket)
            logger.warning("recording not restored", metadata: ["room": "\(name)", "reason": "\(refusal.message)"])
            files.remove(name)
            return
        }
        guarded.recording = RoomRecording(restoring: bytes, lastSeconds: lastSeconds, now: now, limit: options.recordingBytes, ticket: ticket)
    }

    /// The room is forgotten: its recording with it.
    func dropRecording(in guarded: inout Room.Guarded, room name: String) {
        guard let recording = guarded.recording else { return }
        recordingBytes.end(recording.ticket)
        guarded.recording = nil
        recordingFiles?.remove(name)
    }

    /// What `GET /rooms/NAME/recording` may answer.
    public enum RecordingAccess: Sendable {
        case recording([UInt8])
        case refused(status: Int, reason: String)
    }

    /// Room `name`'s recording for whoever may have it: the operator (`admin`, checked by the
    /// caller), whoever gives the room's presenter key (a slow hash, off the loop, counted
    /// against the address as a presenter's join is) or, in a private room, its follow key.
    /// A private room and a room that is not there answer alike until a key opens one (their
    /// keys checked against records no key matches): neither is listed in `GET /rooms`.
    /// `answer` runs on `loop`.
    public func recording(ofRoom name: String, key: String?, followKey: String?, admin: Bool, address: String, on loop: EventLoop,
                          answer: @escaping (RecordingAccess) -> Void) {
        let notRecorded = RecordingAccess.refused(status: 404, reason: "room \(name) is not recorded (present --record, record=1 or rooms.record)")
        let room = rooms.withLock { $0[name] }
        let (bytes, presenterKey, followRecord) = room?.guarded.withLock { ($0.recording?.bytes, $0.core.presenterKeyText, $0.core.followKey) }
            ?? (nil, nil, nil)
        if admin {
            guard room != nil else { return answer(.refused(status: 404, reason: "no room \(name)")) }
            return answer(bytes.map { .recording($0) } ?? notRecorded)
        }
        let hidden = room == nil || followRecord != nil
        if !hidden && bytes == nil { return answer(notRecorded) }
        if hidden, let followKey, !followKey.isEmpty, key == nil {
            if case .refused(let status, let reason)? = followKeyRefusal(name, required: followRecord ?? FollowKey.decoy, given: followKey, address: address) {
                return answer(.refused(status: status, reason: reason))
            }
            return answer(bytes.map { .recording($0) } ?? notRecorded)
        }
        guard let key, !key.isEmpty else {
            return answer(.refused(status: 401, reason: "GET /rooms/\(name)/recording needs the room's presenter key (key=…), the admin token "
                + "(Authorization: Bearer) or, for a private room, its follow key (followKey=…)"))
        }
        let checkable = presenterKey.flatMap { PresenterKey.isLegacy($0) ? nil : $0 }
        guard let record = checkable ?? (hidden ? PresenterKey.decoy : nil) else {
            return answer(.refused(status: 403, reason: "room \(name) has no presenter key this server can check: only the admin token opens its recording"))
        }
        keys.check(key, against: record, room: name, address: address, engine: engine, on: loop) { [self] outcome in
            switch outcome {
            case .checked(let made, let ticket):
                guard ConstantTime.equal(made.utf8, record.utf8) else {
                    keyFailed(room: name, address: address, ticket: ticket, now: loop.now)
                    return answer(.refused(status: 403, reason: "wrong presenter key for room \(name)"))
                }
                ticket.settle(failed: false, now: loop.now)
                // The recording as it is now (it went on while the key was checked).
                let now = room?.guarded.withLock { $0.recording?.bytes }
                answer(now.map { .recording($0) } ?? notRecorded)
            case .limited(let seconds):
                counters.presenterKeyChecksRefused.add(1, ordering: .relaxed)
                refusals.count(.keyLimit)
                answer(.refused(status: 429, reason: "too many keys tried for room \(name) from \(address); try again in \(seconds) s"))
            case .busy:
                answer(.refused(status: 503, reason: "server busy checking presenter keys; try again in a moment"))
            case .unwanted:
                break  // (not asked: `wanted` is always true here)
            }
        }
    }
}
