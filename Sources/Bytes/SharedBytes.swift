#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An immutable, reference-counted byte buffer with a stable address.
///
/// One encoded frame is shared by every connection that sends it: queuing it costs a
/// retain, never a copy, and the stable base pointer lets a write queue hand many of
/// them to one `writev` call.
public final class SharedBytes: @unchecked Sendable {
    /// Start of the bytes; valid for the lifetime of this object.
    public let base: UnsafeRawPointer
    /// Number of bytes.
    public let count: Int
    /// A newer replaceable message may take this one's place in a write queue while none of
    /// it has been written (a slow reader gets the newest document, not a backlog of them).
    public let replaceable: Bool

    private let storage: UnsafeMutableRawPointer

    /// Allocates `count` bytes and lets `initialize` fill all of them.
    public init(count: Int, replaceable: Bool = false, initialize: (UnsafeMutableRawBufferPointer) -> Void) {
        // `malloc` itself: the standard library's `allocate` goes through `posix_memalign`
        // for any alignment (a third dearer; one frame per broadcast and two per join).
        guard let bytes = malloc(Swift.max(count, 1)) else { fatalError("out of memory for \(count) bytes") }
        storage = bytes
        initialize(UnsafeMutableRawBufferPointer(start: storage, count: count))
        base = UnsafeRawPointer(storage)
        self.count = count
        self.replaceable = replaceable
    }

    /// Copies `bytes`.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { destination in
            if let source = bytes.baseAddress, bytes.count > 0 {
                destination.baseAddress!.copyMemory(from: source, byteCount: bytes.count)
            }
        }
    }

    /// Copies `bytes`.
    public convenience init<C: Collection<UInt8>>(_ bytes: C) {
        self.init(count: bytes.count) { destination in
            let copied: Void? = bytes.withContiguousStorageIfAvailable { source in
                if let base = source.baseAddress, !source.isEmpty { destination.baseAddress!.copyMemory(from: base, byteCount: source.count) }
            }
            if copied == nil { _ = destination.initializeMemory(as: UInt8.self, from: bytes) }
        }
    }

    deinit { free(storage) }

    /// The bytes as a buffer pointer; valid while `self` is alive.
    public var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// A copy of the bytes as an array (tests and diagnostics).
    public var array: [UInt8] { Array(buffer) }
}
