import CLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A descriptor watched for another library (see `EventLoop.watch`). Loop thread only.
public final class FileWatch {
    let id: UInt64
    let fd: Int32
    private unowned let loop: EventLoop
    let handler: (Bool, Bool) -> Void
    public private(set) var readable = false
    public private(set) var writable = false

    init(id: UInt64, fd: Int32, loop: EventLoop, handler: @escaping (Bool, Bool) -> Void) {
        self.id = id
        self.fd = fd
        self.loop = loop
        self.handler = handler
    }

    /// Sets which readiness the handler hears about.
    public func update(readable: Bool? = nil, writable: Bool? = nil) {
        loop.assertInEventLoop()
        let newReadable = readable ?? self.readable
        let newWritable = writable ?? self.writable
        guard newReadable != self.readable || newWritable != self.writable else { return }
        self.readable = newReadable
        self.writable = newWritable
        loop.io.update(self)
    }

    /// Stops watching; call before the descriptor is closed.
    public func cancel() {
        loop.assertInEventLoop()
        loop.io.cancel(self)
    }
}
