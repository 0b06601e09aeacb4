import ScrollModel
import Synchronization

/// Bytes all rooms' recordings hold (`limits.recordingsTotalBytes`), and each address's share
/// of them (`limits.recordingsBytesPerAddress`, an IPv6 client by its prefix): the address
/// that asked for a recording (`record=1`, or the room's creator with `rooms.record`) pays
/// for it, so one address cannot take the whole budget. When the budget is full, a room with
/// a presenter takes the bytes of recordings of rooms nobody presents in (the address that
/// holds the most first): their bytes are free at once, and their rooms forget them
/// (`takeDropped`, at the hub's next tick).
///
/// An append costs two relaxed atomics; the lock is taken to start, end or drop a recording.
package final class RecordingBudget: Sendable {
    /// One recording's claim: its room, its address's share, the bytes it holds, whether its
    /// room has a presenter now (the hub says so), whether the budget took it back.
    final class Ticket: Sendable {
        let room: String
        fileprivate let share: Share
        fileprivate let held = Atomic<Int>(0)
        let presented = Atomic<Bool>(true)
        let dropped = Atomic<Bool>(false)

        fileprivate init(room: String, share: Share) {
            self.room = room
            self.share = share
        }
    }

    fileprivate final class Share: Sendable {
        let address: String
        let held = Atomic<Int>(0)
        init(address: String) { self.address = address }
    }

    /// Why bytes do not fit.
    enum Refusal: Error, Equatable {
        /// The address's share is full.
        case addressShare(Int)
        /// All recordings together are at the limit, and none of an unpresented room can go.
        case total(Int)

        var message: String {
            switch self {
            case .addressShare(let limit):
                "this address holds as many bytes of recordings as it may (\(Self.size(limit)), limits.recordingsBytesPerAddress)"
            case .total(let limit):
                "the server holds as many bytes of recordings as it may (\(Self.size(limit)), limits.recordingsTotalBytes)"
            }
        }

        /// `bytes` in the largest unit that shows it whole or nearly (`32 MiB`, `16 KiB`, `900 bytes`).
        static func size(_ bytes: Int) -> String {
            bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : bytes >= 1 << 10 ? "\(bytes >> 10) KiB" : "\(bytes) bytes"
        }
    }

    let limit: Int
    let perAddress: Int
    private let held = Atomic<Int>(0)
    /// The recordings held, and each address's share with how many recordings use it.
    private struct Claims {
        var tickets: [ObjectIdentifier: Ticket] = [:]
        var shares: [String: (share: Share, users: Int)] = [:]

        mutating func remove(_ ticket: Ticket) -> Bool {
            guard tickets.removeValue(forKey: ObjectIdentifier(ticket)) != nil else { return false }
            let address = ticket.share.address
            if let entry = shares[address] { shares[address] = entry.users > 1 ? (entry.share, entry.users - 1) : nil }
            return true
        }
    }

    private let claims = Mutex(Claims())
    /// Rooms whose recording the budget dropped, to forget it.
    private let dropped = Mutex<[String]>([])

    init(limit: Int, perAddress: Int) {
        self.limit = limit
        self.perAddress = perAddress
    }

    /// The rooms whose recordings were dropped since the last call.
    func takeDropped() -> [String] {
        dropped.withLock { rooms in
            defer { rooms = [] }
            return rooms
        }
    }

    package var bytesHeld: Int { held.load(ordering: .relaxed) }

    /// A claim for `room`'s recording, paid by `address` (its group).
    func ticket(room: String, address: String) -> Ticket {
        claims.withLock { claims in
            let share = claims.shares[address]?.share ?? Share(address: address)
            claims.shares[address] = (share, (claims.shares[address]?.users ?? 0) + 1)
            let ticket = Ticket(room: room, share: share)
            claims.tickets[ObjectIdentifier(ticket)] = ticket
            return ticket
        }
    }

    /// Counts `bytes` more for `ticket`, or says why they do not fit (and counts nothing).
    func reserve(_ bytes: Int, for ticket: Ticket) -> Refusal? {
        guard !ticket.dropped.load(ordering: .relaxed) else { return .total(limit) }
        if perAddress > 0, ticket.share.held.load(ordering: .relaxed) + bytes > perAddress { return .addressShare(perAddress) }
        if !take(bytes) {
            guard ticket.presented.load(ordering: .relaxed), dropUnpresented(making: bytes, for: ticket), take(bytes) else { return .total(limit) }
        }
        ticket.share.held.add(bytes, ordering: .relaxed)
        ticket.held.add(bytes, ordering: .relaxed)
        return nil
    }

    /// Counts `bytes` unchecked (a recording restored at start).
    func restore(_ bytes: Int, for ticket: Ticket) {
        held.add(bytes, ordering: .relaxed)
        ticket.share.held.add(bytes, ordering: .relaxed)
        ticket.held.add(bytes, ordering: .relaxed)
    }

    /// The recording is gone: its bytes are free.
    func end(_ ticket: Ticket) {
        claims.withLock { claims in
            if claims.remove(ticket) { free(ticket) }
        }
    }

    private func take(_ bytes: Int) -> Bool {
        var current = held.load(ordering: .relaxed)
        while true {
            if limit > 0, bytes > 0, current + bytes > limit { return false }
            let (exchanged, original) = held.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    private func free(_ ticket: Ticket) {
        let bytes = ticket.held.exchange(0, ordering: .relaxed)
        held.subtract(bytes, ordering: .relaxed)
        ticket.share.held.subtract(bytes, ordering: .relaxed)
    }

    /// Drops recordings of rooms nobody presents in (the address holding the most first, then
    /// the largest) until `bytes` fit; whether they do.
    private func dropUnpresented(making bytes: Int, for asking: Ticket) -> Bool {
        claims.withLock { claims in
            let candidates = claims.tickets.values.filter { $0 !== asking && !$0.presented.load(ordering: .relaxed) }.sorted {
                let (a, b) = ($0.share.held.load(ordering: .relaxed), $1.share.held.load(ordering: .relaxed))
                return a != b ? a > b : $0.held.load(ordering: .relaxed) > $1.held.load(ordering: .relaxed)
            }
            for ticket in candidates {
                if bytesHeld + bytes <= limit { break }
                _ = claims.remove(ticket)
                ticket.dropped.store(true, ordering: .relaxed)
                free(ticket)
                dropped.withLock { $0.append(ticket.room) }
            }
            return bytesHeld + bytes <= limit
        }
    }
}
