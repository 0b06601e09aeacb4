import Bytes
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
        case document(fingerprint: String, BroadcastFrame)
        /// Anything else that must not be dropped (driver changes).
        case reliable(BroadcastFrame)
    }

    private struct Mailbox {
        var items: [Item] = []
        var scheduled = false
    }

    let loop: EventLoop
    /// Members on this loop. Touched only on the loop's thread.
    private(set) var members: [RoomMember] = []
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
        member.slot = members.count
        members.append(member)
    }

    func remove(_ member: RoomMember) {
        let slot = member.slot
        guard slot >= 0, slot < members.count, members[slot] === member else { return }
        let last = members.removeLast()
        if slot < members.count {
            members[slot] = last
            last.slot = slot
        }
        member.slot = -1
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
            return !box.scheduled
        }
        if wake { loop.execute { [self] in drain() } }
    }

    private func drain() {
        let items = mailbox.withLock { box -> [Item] in
            box.scheduled = false
            defer { box.items.removeAll(keepingCapacity: true) }
            return box.items
        }
        var deliveries = 0
        var conflated = 0
        for item in items {
            switch item {
            case .state(let seq, let frame):
                for member in members where seq > member.lastSeq {
                    member.lastSeq = seq
                    let bytes = frame.frame(forWindowBits: member.windowBits)
                    if conflation {
                        if member.peer.sendLatest(frame: bytes) { conflated += 1 }
                    } else {
                        member.peer.send(frame: bytes)
                    }
                    deliveries += 1
                }
            case .presence(let frame), .reliable(let frame):
                for member in members { member.peer.send(frame: frame.frame(forWindowBits: member.windowBits)) }
            case .document(let fingerprint, let frame):
                for member in members where member.lastDocument != fingerprint {
                    member.lastDocument = fingerprint
                    member.peer.send(frame: frame.frame(forWindowBits: member.windowBits))
                }
            }
        }
        counters.deliveries.add(deliveries, ordering: .relaxed)
        if conflated > 0 { counters.conflatedAtSocket.add(conflated, ordering: .relaxed) }
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
    /// States replaced in a loop's mailbox before delivery.
    public let conflatedAtLoop = Atomic<Int>(0)
    /// States replaced in a follower's send slot (the follower was behind).
    public let conflatedAtSocket = Atomic<Int>(0)

    public init() {}
}
