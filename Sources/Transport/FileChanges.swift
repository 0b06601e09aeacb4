#if canImport(Glibc)
import Glibc
#endif

/// Says when a file is saved: written and closed in place, or written elsewhere and renamed
/// over it (as most editors save). inotify watches the file's directory, since a rename
/// replaces the file a watch on the file itself would follow; its descriptor is a `FileWatch`
/// on the loop. Loop thread only; `cancel()` stops it.
public final class FileChanges {
    private let fd: Int32
    /// The file's name in its directory, as inotify reports it.
    private let name: [UInt8]
    private let changed: () -> Void
    private var watch: FileWatch?
    private var buffer = [UInt8](repeating: 0, count: 4096)

    /// Watches `path`; `changed` runs on `loop` after each save.
    public init(path: String, loop: EventLoop, changed: @escaping () -> Void) throws(SystemError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        name = Array((slash.map { String(path[path.index(after: $0)...]) } ?? path).utf8)
        self.changed = changed
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw SystemError(call: "inotify_init1", errno: errno) }
        guard inotify_add_watch(fd, directory, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) >= 0 else {
            let error = errno
            close(fd)
            throw SystemError(call: "inotify_add_watch", errno: error)
        }
        do {
            watch = try loop.watch(fd: fd) { [weak self] readable, _ in if readable { self?.drain() } }
        } catch {
            close(fd)
            throw error
        }
        watch?.update(readable: true)
    }

    /// Stops watching and closes the descriptor.
    public func cancel() {
        guard let watch else { return }
        watch.cancel()
        self.watch = nil
        close(fd)
    }

    /// Reads every event queued; one call of `changed` however many saves of the file they hold.
    private func drain() {
        var saved = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            // struct inotify_event: wd, mask, cookie, len (4 bytes each), then len bytes of name.
            while offset + 16 <= count {
                let mask: UInt32 = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let length = Int(buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
                let named = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 || named.elementsEqual(name) { saved = true }
                offset += 16 + length
            }
        }
        if saved { changed() }
    }
}
