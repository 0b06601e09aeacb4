import Bytes
import DequeModule
#if canImport(Glibc)
import Glibc
#endif

/// The frames waiting to go out on one connection. Each entry shares its bytes with
/// every other queue that sends them; queuing costs a retain, not a copy. (Public for the
/// micro benchmarks, which drive it as a channel's flush does.)
public struct WriteQueue {
    private struct Chunk {
        let bytes: SharedBytes
        var offset: Int
    }

    private var chunks = Deque<Chunk>()
    public private(set) var byteCount = 0

    public init() {}

    public var isEmpty: Bool { chunks.isEmpty }

    public mutating func append(_ bytes: SharedBytes) {
        guard bytes.count > 0 else { return }
        chunks.append(Chunk(bytes: bytes, offset: 0))
        byteCount += bytes.count
    }

    public mutating func removeAll() {
        chunks.removeAll()
        byteCount = 0
    }

    /// Fills `iovecs` with the queued bytes, oldest first; returns how many it used.
    public func gather(into iovecs: UnsafeMutableBufferPointer<iovec>) -> Int {
        var used = 0
        for chunk in chunks {
            guard used < iovecs.count else { break }
            iovecs[used] = iovec(
                iov_base: UnsafeMutableRawPointer(mutating: chunk.bytes.base.advanced(by: chunk.offset)),
                iov_len: chunk.bytes.count - chunk.offset)
            used += 1
        }
        return used
    }

    /// The unsent part of the oldest chunk.
    public var first: UnsafeRawBufferPointer? {
        chunks.first.map { UnsafeRawBufferPointer(start: $0.bytes.base.advanced(by: $0.offset), count: $0.bytes.count - $0.offset) }
    }

    /// Drops `count` bytes that were written.
    public mutating func consume(_ count: Int) {
        var left = count
        byteCount -= count
        while left > 0 {
            let available = chunks[0].bytes.count - chunks[0].offset
            if left >= available {
                chunks.removeFirst()
                left -= available
            } else {
                chunks[0].offset += left
                left = 0
            }
        }
    }
}
