import Bytes
import DequeModule
#if canImport(Glibc)
import Glibc
#endif

/// The frames waiting to go out on one connection. Each entry shares its bytes with
/// every other queue that sends them; queuing costs a retain, not a copy. The oldest
/// entry is held inline, so a connection that never has two frames waiting (an idle or
/// a conflated follower) needs no storage at all. (Public for the micro benchmarks,
/// which drive it as a channel's flush does.)
public struct WriteQueue {
    private struct Chunk {
        let bytes: SharedBytes
        var offset: Int

        var iovec: Glibc.iovec {
            Glibc.iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.base.advanced(by: offset)), iov_len: bytes.count - offset)
        }
    }

    private var head: Chunk?
    private var rest = Deque<Chunk>()
    public private(set) var byteCount = 0

    public init() {}

    public var isEmpty: Bool { head == nil }

    /// Queues `bytes` last. A replaceable message first takes out an older replaceable one
    /// that is still wholly unsent (never the oldest chunk, which may be half written or
    /// handed to TLS); returns whether it did.
    @discardableResult
    public mutating func append(_ bytes: SharedBytes) -> Bool {
        guard bytes.count > 0 else { return false }
        var replaced = false
        if bytes.replaceable, let index = rest.firstIndex(where: { $0.bytes.replaceable }) {
            byteCount -= rest.remove(at: index).bytes.count
            replaced = true
        }
        if head == nil { head = Chunk(bytes: bytes, offset: 0) } else { rest.append(Chunk(bytes: bytes, offset: 0)) }
        byteCount += bytes.count
        return replaced
    }

    /// Empties the queue and gives its storage back.
    public mutating func removeAll() {
        head = nil
        rest.removeAll()
        byteCount = 0
    }

    /// Fills `iovecs` with the queued bytes, oldest first; returns how many it used. (Each
    /// chunk's address and length are read in place: no chunk is copied out, which would
    /// take and drop a reference count per frame written.)
    public func gather(into iovecs: UnsafeMutableBufferPointer<iovec>) -> Int {
        guard iovecs.count > 0, let first = head?.iovec else { return 0 }
        iovecs[0] = first
        let used = min(iovecs.count, 1 + rest.count)
        for index in 1..<used { iovecs[index] = rest[index - 1].iovec }
        return used
    }

    /// The unsent part of the oldest chunk.
    public var first: UnsafeRawBufferPointer? {
        head.map { UnsafeRawBufferPointer(start: $0.bytes.base.advanced(by: $0.offset), count: $0.bytes.count - $0.offset) }
    }

    /// Drops `count` bytes that were written.
    public mutating func consume(_ count: Int) {
        var left = count
        byteCount -= count
        while left > 0, let oldest = head {
            let available = oldest.bytes.count - oldest.offset
            if left >= available {
                head = rest.popFirst()
                left -= available
            } else {
                head!.offset += left
                left = 0
            }
        }
    }
}
