@testable import Access
@testable import SyncServer
import Testing

/// The server's tables that grow with traffic, each back to its level when the traffic is
/// over (issue 49): per-address connection counts, room creations, key failures, verified keys.
@Suite("Tables that grow with traffic are bounded")
struct BoundedTablesTests {
    static let minute: UInt64 = 60_000_000_000
    static let addresses = (0..<1000).map { "10.0.\($0 / 250).\($0 % 250)" }

    /// One entry per address with open connections, none once they are closed.
    @Test func connectionCountsGoWithTheConnections() {
        let limits = ConnectionLimits(total: 10_000, perAddress: 10)
        for (index, address) in Self.addresses.enumerated() { #expect(limits.admit(address: address, open: index + 1) == nil) }
        #expect(limits.addressesTracked == Self.addresses.count)
        for address in Self.addresses { limits.release(address: address) }
        #expect(limits.addressesTracked == 0)
    }

    /// An address is remembered while its bucket refills or it holds an unclaimed room.
    @Test func roomCreationsAreForgottenOnceTheirMinuteIsOver() {
        let limits = RoomCreationLimits(perMinute: 6, unclaimedPerAddress: 3)
        for (index, address) in Self.addresses.enumerated() { #expect(limits.create(address: address, claimed: index != 0, now: 0) == nil) }
        limits.sweep(now: 5_000_000_000)
        #expect(limits.addressesTracked == Self.addresses.count, "buckets still refilling (a token in 10 s)")
        limits.sweep(now: Self.minute + 1)
        #expect(limits.addressesTracked == 1, "only the address holding an unclaimed room")
        limits.settled(address: Self.addresses[0])
        limits.sweep(now: Self.minute + 2)
        #expect(limits.addressesTracked == 0)
    }

    /// However many addresses create rooms within a minute, the buckets stay within their
    /// capacity; an address holding an unclaimed room is never the one forgotten.
    @Test func roomCreationBucketsStayWithinTheirCapacity() {
        let limits = RoomCreationLimits(perMinute: 6, unclaimedPerAddress: 1, capacity: 100)
        #expect(limits.create(address: "10.9.9.9", claimed: false, now: 0) == nil)
        for index in 0..<10_000 {
            #expect(limits.create(address: "10.0.\(index / 256).\(index % 256)", claimed: true, now: UInt64(index)) == nil)
            #expect(limits.addressesTracked <= 100)
        }
        #expect(limits.create(address: "10.9.9.9", claimed: false, now: 10_001) != nil, "its unclaimed room is still counted")
        limits.settled(address: "10.9.9.9")
        #expect(limits.create(address: "10.9.9.9", claimed: false, now: 10_002) == nil)
    }

    /// A window per address and room with failures, kept a minute (or while a check runs).
    @Test func keyFailuresAreForgottenOnceTheirMinuteIsOver() throws {
        let limits = KeyFailureLimits(perMinute: 5)
        for address in Self.addresses { limits.failed(address: address, room: "talk", now: 0) }
        guard case .success(let running) = limits.begin(address: "10.9.9.9", room: "talk", now: 0) else { throw Failure("a check may run") }
        #expect(limits.windowsHeld == Self.addresses.count + 1)
        limits.sweep(now: Self.minute / 2)
        #expect(limits.windowsHeld == Self.addresses.count + 1, "still in their minute")
        limits.sweep(now: Self.minute + 1)
        #expect(limits.windowsHeld == 1, "the running check's window stays")
        running.settle(failed: false, now: Self.minute + 1)
        limits.sweep(now: 2 * Self.minute + 2)
        #expect(limits.windowsHeld == 0)
    }

    /// Within one minute, however many addresses and rooms fail, the windows stay within their
    /// capacity; a window with a check running is never the one given up.
    @Test func keyFailureWindowsStayWithinTheirCapacity() throws {
        let limits = KeyFailureLimits(perMinute: 5, capacity: 100)
        guard case .success(let running) = limits.begin(address: "10.9.9.9", room: "talk", now: 0) else { throw Failure("a check may run") }
        for index in 0..<10_000 {
            limits.failed(address: "10.0.\(index / 256).\(index % 256)", room: "room-\(index % 7)", now: UInt64(index))
            #expect(limits.windowsHeld <= 100)
        }
        #expect(limits.windowsHeld > 0)
        running.settle(failed: true, now: 10_001)
        #expect(limits.retryAfter(address: "10.0.39.15", room: "room-3", now: 10_002) == nil, "one failure is not the limit")
        for _ in 0..<4 { limits.failed(address: "10.9.9.9", room: "talk", now: 10_003) }
        #expect(limits.retryAfter(address: "10.9.9.9", room: "talk", now: 10_004) != nil,
                "the running check's window was kept: its failure and four more reach the limit")
    }

    /// Verified keys are remembered up to a fixed number, however many rooms come and go.
    @Test func verifiedKeysStayWithinTheirCapacity() {
        let hasher = KeyHasher()
        for index in 0..<(KeyHasher.verifiedCapacity + 500) { hasher.remember("record-\(index)", "digest") }
        #expect(hasher.verifiedCount > 0)
        #expect(hasher.verifiedCount <= KeyHasher.verifiedCapacity)
    }
}
