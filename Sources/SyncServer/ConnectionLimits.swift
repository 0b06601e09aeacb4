import Synchronization
import WebSocketCore

/// The connection limits checked when a client connects: in total and per client address
/// (an IPv6 client counted by its network, `AddressGrouping`).
final class ConnectionLimits: Sendable {
    let total: Int
    /// 0: no limit per address (nothing is tracked).
    let perAddress: Int
    private let grouping: AddressGrouping
    private let refusals: RefusalCounters
    private let byAddress = Mutex<[String: Int]>([:])

    init(total: Int, perAddress: Int, grouping: AddressGrouping = AddressGrouping(), refusals: RefusalCounters = RefusalCounters()) {
        self.total = total
        self.perAddress = perAddress
        self.grouping = grouping
        self.refusals = refusals
    }

    /// Counts a new connection from `address` (`open` includes it) and answers the refusal
    /// when it is over a limit. Every call is matched by one `release(address:)`.
    func admit(address: String, open: Int) -> HTTPResponse? {
        if perAddress > 0 {
            let address = grouping.group(address)
            let count = byAddress.withLock { counts in
                counts[address, default: 0] += 1
                return counts[address]!
            }
            if count > perAddress {
                refusals.count(.connections)
                return .error(429, "too many connections from \(address) (limit \(perAddress))", headers: [("Retry-After", "10")])
            }
        }
        if open > total {
            refusals.count(.connections)
            return .error(503, "server at its connection limit (\(total))", headers: [("Retry-After", "10")])
        }
        return nil
    }

    func release(address: String) {
        guard perAddress > 0 else { return }
        let address = grouping.group(address)
        byAddress.withLock { counts in
            if let count = counts[address], count > 1 { counts[address] = count - 1 } else { counts[address] = nil }
        }
    }

    /// Addresses with open connections (for tests and metrics).
    var addressesTracked: Int { byAddress.withLock { $0.count } }
}
