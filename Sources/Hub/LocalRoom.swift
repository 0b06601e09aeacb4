package import Access
import Bytes
package import RoomKit
import Synchronization
import Transport

/// A room's members on one event loop, and the mailbox through which the room's
/// broadcasts reach that loop.
///
/// Any thread may `post`; the loop drains the mailbox once per wake-up. A newer state
/// (or presence) replaces an older one still waiting, so a busy loop delivers the newest
/// state rather than a backlog; `driver` and `document` messages are never dropped.
final class LocalRoom: @unchecked Sendable {
    enum Item {
        /// A state: conflatable, delivered at most once per member in `seq` order.
        case state(seq: Int, BroadcastFrame)
        /// Presence counts: conflatable, delivered reliably.
        case presence(BroadcastFrame)
        /// A document: never dropped; skipped by a member that already has it.
        case document(version: UInt32, BroadcastFrame)
        /// Anything else that must not be dropped (driver changes).
        case reliable(BroadcastFrame)
        /// The room became private: its followers are closed (1008) with this reason; or its
        /// presenter key changed: its presenters who proved none by a token are.
        case evict(presenters: Bool, reason: String)
    }

    private struct Mailbox {
        var items: [Item] = []
        var scheduled = false
        /// When the oldest waiting item was posted.
        var postedAt: UInt64 = 0
    }

    let loop: EventLoop
    /// Members on this loop. Touched only on the loop's thread.
    @exclusivity(unchecked) private(set) var members: [RoomMember] = []

    /// With conflation, the newest state goes out in passes of `passChunk` members, the loop
    /// reading its sockets between them: a state that arrives mid-pass (a presenter on this
    /// loop keeps scrolling) goes to the members not yet reached, so in a room of 10,000 the
    /// last of them get a state a few ms old, not one a whole pass old. Loop thread only.
    private var newest: (seq: Int, frame: BroadcastFrame)?
    private var cursor = 0
    /// Members still to visit before every one has the newest state.
    private var remaining = 0
    private var passScheduled = false
    private var continuationPending = false
    static let passChunk = 1024
    /// Presence goes out in passes too, of `presenceChunk` members a loop turn: a room's count
    /// changing in a join storm must not hold the loop (6,000 sends in one turn took 57 ms
    /// here, which every handshake waiting behind them paid). A newer count restarts the pass.
    private var presence: BroadcastFrame?
    private var presenceCursor = 0
    private var presenceRemaining = 0
    private var presencePending = false
    static let presenceChunk = 256
    private let mailbox = Mutex(Mailbox())
    private let conflation: Bool
    private let counters: RoomCounters

    init(loop: EventLoop, conflation: Bool, counters: RoomCounters) {
        self.loop = loop
        self.conflation = conflation
        self.counters = counters
    }

    // MARK: Loop thread

    func add(_ member: RoomMember) {
        member.slot = Int32(members.count)
        members.append(member)
    }

    /// The `seq` members' marks count from (`SeqMark`). Loop thread only.
    private var markBase = 0

    /// `seq` as a member's mark here (0: none). A `seq` 2^30 or more above the base moves the
    /// base to it, and every member's mark with it (once per leap of the room's numbering:
    /// members are never that far behind otherwise).
    func mark(_ seq: Int) -> SeqMark {
        guard seq > 0 else { return .none }
        let distance = seq - markBase
        if distance < 1 << 30 { return distance > -(1 << 30) ? SeqMark(offset: Int32(distance)) : .none }
        for member in members where member.lastSeq != .none {
            let moved = Int(member.lastSeq.offset) - distance
            member.lastSeq = moved > -(1 << 30) ? SeqMark(offset: Int32(moved)) : .none
        }
        markBase = seq
        return SeqMark(offset: 0)
    }

    func remove(_ member: RoomMember) {
        let slot = Int(member.slot)
        guard slot >= 0, slot < members.count, members[slot] === member else { return }
        let last = members.removeLast()
        if slot < members.count {
            members[slot] = last
            last.slot = Int32(slot)
        }
        member.slot = -1
        // The member moved into the slot may be one the pass already went by: go round again.
        if passScheduled { remaining = members.count }
        if presence != nil { presenceRemaining = members.count }
    }

    // MARK: Any thread

    /// Queues an item for this loop's members; call with the room locked so that items
    /// from one room arrive in the order they were made.
    func post(_ item: Item) {
        let wake = mailbox.withLock { box -> Bool in
            switch item {
            case .state where conflation:
                if let index = box.items.lastIndex(where: { if case .state = $0 { true } else { false } }) {
                    box.items.remove(at: index)
                    counters.conflatedAtLoop.add(1, ordering: .relaxed)
                }
            case .presence:
                box.items.removeAll { if case .presence = $0 { true } else { false } }
            default:
                break
            }
            box.items.append(item)
            defer { box.scheduled = true }
            if !box.scheduled { box.postedAt = monotonicNanoseconds() }
            return !box.scheduled
        }
        if wake { loop.execute { [self] in drain() } }
    }

    private func drain() {
        let (items, postedAt) = mailbox.withLock { box -> ([Item], UInt64) in
            box.scheduled = false
            defer { box.items.removeAll(keepingCapacity: true) }
            return (box.items, box.postedAt)
        }
        counters.broadcastLatency.record(nanoseconds: monotonicNanoseconds() &- postedAt)
        var deliveries = 0
        var frames = 0
        var bytesOut = 0
        for item in items {
            switch item {
            case .state(let seq, let frame) where conflation:
                if seq > newest?.seq ?? 0 { newest = (seq, frame) }
                remaining = members.count
                if !passScheduled {
                    passScheduled = true
                    pass(budget: Self.passChunk)
                }
            case .state(let seq, let frame):
                let mark = mark(seq)
                forEachMember { member in
                    guard member.lastSeq.precedes(mark) else { return }
                    member.lastSeq = mark
                    bytesOut += Self.send(frame, to: member)
                    deliveries += 1
                }
            case .presence(let frame):
                // Counts, not an event: the newest goes, a chunk of members per loop turn.
                presence = frame
                presenceCursor = 0
                presenceRemaining = members.count
                if !presencePending { frames += presencePass() }
            case .reliable(let frame):
                finishPass()  // messages after a state go out after it, to every member
                forEachMember { member in
                    bytesOut += Self.send(frame, to: member)
                    frames += 1
                }
            case .document(let version, let frame):
                finishPass()
                forEachMember { member in
                    guard member.lastDocument != version else { return }
                    member.lastDocument = version
                    bytesOut += Self.send(frame, to: member)
                    frames += 1
                }
            case .evict(let presenters, let reason):
                finishPass()
                // Closing reaches the hub (leave) only later, from the connection: a copy.
                for member in members where presenters ? member.role == .presenter && !member.authorized : member.role == .follower {
                    member.peer.close(code: .policyViolation, reason: reason)
                }
            }
        }
        counters.deliveries.add(deliveries, ordering: .relaxed)
        counters.broadcastFrames.add(frames + deliveries, ordering: .relaxed)
        counters.broadcastBytes.add(bytesOut, ordering: .relaxed)
    }

    /// `body` with each member in turn, lent from a copy of the list (which keeps every one
    /// alive while a send may change the room's own list).
    @inline(__always)
    private func forEachMember(_ body: (RoomMember) -> Void) {
        let members = self.members
        for index in members.indices { Self.borrow(members, index, body) }
    }

    /// `body` with `members[index]`, lent without a reference count: `members`, a constant,
    /// keeps it alive. (Iterated plainly, a fan-out loop took and dropped a count on every
    /// receiver around its send, an atomic operation each.)
    @inline(__always)
    private static func borrow<Result>(_ members: [RoomMember], _ index: Int, _ body: (RoomMember) -> Result) -> Result {
        Unmanaged.passUnretained(members[index])._withUnsafeGuaranteedRef(body)
    }

    /// Queues `frame` for `member` in the encoding its connection takes; returns its bytes.
    private static func send(_ frame: BroadcastFrame, to member: RoomMember) -> Int {
        frame.withFrame(forWindowBits: member.windowBits) { bytes in
            member.peer.send(frame: bytes)
            return bytes.count
        }
    }

    /// Sends the newest state to up to `budget` members that lack it, from where the last
    /// chunk stopped; the rest go in the next loop iteration, after the loop's I/O.
    private func pass(budget: Int) {
        guard let (seq, frame) = newest else { passScheduled = false; return }
        let mark = mark(seq)
        var budget = budget
        var deliveries = 0
        var conflated = 0
        var bytesOut = 0
        let members = self.members  // keeps each member alive while `borrow` lends it (a send may change the list)
        while remaining > 0, budget > 0, !members.isEmpty {
            if cursor >= members.count { cursor = 0 }
            let index = cursor
            cursor += 1
            remaining -= 1
            budget -= 1
            Self.borrow(members, index) { member in
                guard member.lastSeq.precedes(mark) else { return }
                member.lastSeq = mark
                frame.withFrame(forWindowBits: member.windowBits) { bytes in
                    bytesOut += bytes.count
                    if member.peer.sendLatest(frame: bytes) { conflated += 1 }
                }
                deliveries += 1
            }
        }
        if remaining > 0 && !self.members.isEmpty {
            if !continuationPending {
                continuationPending = true
                loop.schedule(after: 1) { [self] in
                    continuationPending = false
                    if passScheduled { pass(budget: Self.passChunk) }
                }
            }
        } else {
            passScheduled = false
        }
        counters.deliveries.add(deliveries, ordering: .relaxed)
        counters.broadcastFrames.add(deliveries, ordering: .relaxed)
        counters.broadcastBytes.add(bytesOut, ordering: .relaxed)
        if conflated > 0 { counters.conflatedAtSocket.add(conflated, ordering: .relaxed) }
    }

    /// Sends the newest presence to up to `presenceChunk` more members; the rest go in the loop's
    /// next turns. Returns the frames sent.
    private func presencePass() -> Int {
        guard let frame = presence else { return 0 }
        var sent = 0
        var bytesOut = 0
        while presenceRemaining > 0, sent < Self.presenceChunk, !members.isEmpty {
            if presenceCursor >= members.count { presenceCursor = 0 }
            let member = members[presenceCursor]
            presenceCursor += 1
            presenceRemaining -= 1
            bytesOut += Self.send(frame, to: member)
            sent += 1
        }
        if presenceRemaining > 0 && !members.isEmpty {
            presencePending = true
            loop.schedule(after: 1) { [self] in
                presencePending = false
                let frames = presencePass()
                counters.broadcastFrames.add(frames, ordering: .relaxed)
            }
        } else {
            presence = nil
        }
        counters.broadcastBytes.add(bytesOut, ordering: .relaxed)
        return sent
    }

    /// Finishes the pass under way at once (before a message that must follow the state).
    private func finishPass() {
        guard passScheduled else { return }
        pass(budget: .max)
    }
}

/// Counters every room shares (for tests, logs and, later, /metrics).
public final class RoomCounters: Sendable {
    /// States that went out (or will) to members: queued less those replaced unsent.
    public var statesDelivered: Int {
        deliveries.load(ordering: .relaxed) - conflatedAtSocket.load(ordering: .relaxed)
    }

    /// States handed to members' queues (including any later replaced in the send slot).
    public let deliveries = Atomic<Int>(0)
    /// Rooms fetched again from Redis because a change could not follow what the room held.
    public let refetches = Atomic<Int>(0)
    /// States replaced in a loop's mailbox before delivery.
    public let conflatedAtLoop = Atomic<Int>(0)
    /// States replaced in a follower's send slot (the follower was behind).
    public let conflatedAtSocket = Atomic<Int>(0)
    /// Broadcast frames and their bytes queued to members.
    public let broadcastFrames = Atomic<Int>(0)
    public let broadcastBytes = Atomic<Int>(0)
    /// Presenters refused for a wrong key.
    public let presenterKeyFailures = Atomic<Int>(0)
    /// Presenter joins refused before their key was checked (the address had as many checks
    /// running and wrong keys as it may).
    public let presenterKeyChecksRefused = Atomic<Int>(0)
    /// Rooms whose recording started, and recordings that stopped at a byte limit.
    public let recordingsStarted = Atomic<Int>(0)
    public let recordingsStopped = Atomic<Int>(0)
    /// Time from a room change to its delivery on a loop.
    public let broadcastLatency = LatencyHistogram()

    public init() {}
}

/// A Prometheus histogram of durations with fixed buckets (50 µs to 1 s), written from
/// any thread with relaxed atomics.
public final class LatencyHistogram: Sendable {
    /// Upper bounds in seconds.
    static let bounds: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
    private static let boundsNanoseconds = bounds.map { UInt64($0 * 1e9) }
    private let counts = (0...LatencyHistogram.bounds.count).map { _ in Counter() }
    private let sumNanoseconds = Atomic<Int>(0)

    public init() {}

    func record(nanoseconds: UInt64) {
        let index = Self.boundsNanoseconds.firstIndex { nanoseconds <= $0 } ?? Self.bounds.count
        counts[index].add(1)
        sumNanoseconds.add(Int(min(nanoseconds, UInt64(Int.max))), ordering: .relaxed)
    }

    /// Observations so far.
    public var count: Int { counts.reduce(0) { $0 + $1.value } }

    /// The count at or below each bound (cumulative, as Prometheus shows them).
    public var buckets: [(bound: Double, count: Int)] {
        var cumulative = 0
        return Self.bounds.enumerated().map { index, bound in
            cumulative += counts[index].value
            return (bound, cumulative)
        }
    }

    /// The observations' sum in seconds.
    public var sumSeconds: Double { Double(sumNanoseconds.load(ordering: .relaxed)) / 1e9 }
}
