import HTTP1
import Synchronization
import WebSocketCore

/// The connection limits checked when a client connects: in total and per client address
/// (an IPv6 client counted by its network, `AddressGrouping`).
package final class ConnectionLimits: Sendable {
    /// Both may change while the server runs (a reload); connections already open stay.
    private let totalLimit: Atomic<Int>
    /// 0: no limit per address.
    private let perAddressLimit: Atomic<Int>
    package var total: Int { totalLimit.load(ordering: .relaxed) }
    package var perAddress: Int { perAddressLimit.load(ordering: .relaxed) }
    private let grouping: AddressGrouping
    /// Told of each refusal (the server counts them as `connections` refusals).
    private let refused: @Sendable () -> Void
    /// What is counted, as refusals name it ("connections", "terminal readers").
    private let what: String
    /// Open connections per address: bounded by the connections themselves, never given up.
    private let byAddress = AddressTable(OpenConnections(), capacity: .max)

    /// An address's open connections; it goes with its last.
    private struct OpenConnections: AddressLimit {
        func fresh(now: UInt64) -> Int { 0 }
        func advance(_ entry: inout Int, to now: UInt64) {}
        func isIdle(_ entry: Int, now: UInt64) -> Bool { entry <= 0 }
        func isEmpty(_ entry: Int) -> Bool { entry <= 0 }
        func age(_ entry: Int) -> UInt64? { nil }
    }

    package init(total: Int, perAddress: Int, grouping: AddressGrouping = AddressGrouping(), what: String = "connections",
                 refused: @escaping @Sendable () -> Void = {}) {
        self.what = what
        totalLimit = Atomic(total)
        perAddressLimit = Atomic(perAddress)
        self.grouping = grouping
        self.refused = refused
    }

    /// Counts a new connection from `address` (`open` includes it) and answers the refusal
    /// when it is over a limit. Every call is matched by one `release(address:)`.
    package func admit(address: String, open: Int) -> HTTPResponse? {
        // Every address is counted (a lock per connection), so that a limit set by a reload
        // counts the connections already open too.
        let perAddress = self.perAddress
        let address = grouping.group(address)
        let count = byAddress.update(address, now: 0) { count in
            count += 1
            return count
        }
        if perAddress > 0 {
            if count > perAddress {
                refused()
                return .error(429, "too many \(what) from \(address) (limit \(perAddress))", headers: [("Retry-After", "10")])
            }
        }
        let total = self.total
        if open > total {
            refused()
            return .error(503, "server at its \(what == "connections" ? "connection limit" : "limit of \(what)") (\(total))", headers: [("Retry-After", "10")])
        }
        return nil
    }

    /// New limits for the connections that come next.
    package func set(total: Int, perAddress: Int) {
        totalLimit.store(total, ordering: .relaxed)
        perAddressLimit.store(perAddress, ordering: .relaxed)
    }

    package func release(address: String) {
        let address = grouping.group(address)
        byAddress.ifPresent(address) { $0 -= 1 }
    }

    /// Addresses with open connections (for tests and metrics).
    package var addressesTracked: Int { byAddress.count }
}
