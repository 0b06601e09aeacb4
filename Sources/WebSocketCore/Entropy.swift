import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Random bytes for handshake keys and masking keys, from the kernel's generator
/// (`/dev/urandom`), fetched 4 KiB at a time: one system call per 1,024 masking keys instead
/// of one per key (RFC 6455 §5.3 asks for unpredictable keys, which this keeps).
enum Entropy {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private static let pool = Mutex(Pool())
    /// Opened once, kept open (-1 if it cannot be).
    private static let urandom = open("/dev/urandom", O_RDONLY | O_CLOEXEC)

    /// Fills `buffer` with random bytes.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        pool.withLock { pool in
            var offset = 0
            while offset < buffer.count {
                if pool.used == pool.bytes.count {
                    pool.bytes.withUnsafeMutableBytes { refill($0) }
                    pool.used = 0
                }
                let count = min(buffer.count - offset, pool.bytes.count - pool.used)
                pool.bytes.withUnsafeBytes { source in
                    buffer.baseAddress!.advanced(by: offset).copyMemory(from: source.baseAddress!.advanced(by: pool.used), byteCount: count)
                }
                pool.used += count
                offset += count
            }
        }
    }

    static func uint32() -> UInt32 {
        var value: UInt32 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }

    static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { fill($0) }
        return bytes
    }

    private static func refill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < buffer.count {
            let got = urandom < 0 ? -1 : read(urandom, buffer.baseAddress!.advanced(by: offset), buffer.count - offset)
            if got > 0 {
                offset += got
            } else if got == 0 || errno != EINTR {
                // No /dev/urandom (a sandbox): the standard library's generator, a call per byte.
                var generator = SystemRandomNumberGenerator()
                for index in offset..<buffer.count { buffer[index] = UInt8.random(in: 0...255, using: &generator) }
                return
            }
        }
    }
}
