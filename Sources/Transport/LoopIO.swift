#if canImport(Glibc)
import Glibc
#endif

/// What differs between a loop on sockets (`EpollIO`) and a loop a test steps (`EmbeddedIO`):
/// how the loop waits for readiness, and how a channel's bytes reach the far end. Everything
/// above it — tasks, timers, flushes, ticks, the channels themselves — is one `EventLoop`.
/// One per loop, never per channel: a connection pays nothing for there being two.
protocol LoopIO: AnyObject {
    /// Waits up to `timeoutMilliseconds` (0: not at all) and hands what is ready to the
    /// loop's channels, listeners and watches.
    func poll(_ loop: EventLoop, timeoutMilliseconds: Int32)
    /// Makes a `poll` in progress return. Safe from any thread.
    func wake()
    /// Starts watching a registered channel: readable always, writable on request.
    func add(_ channel: Channel, writable: Bool) throws(SystemError)
    /// Sets what a channel is watched for.
    func setInterest(_ channel: Channel, readable: Bool, writable: Bool)
    /// Reads what has arrived: `.done(0)` at the end of the stream.
    func read(_ channel: Channel, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int>
    /// Writes what the far end takes of `count` vectors.
    func write(_ channel: Channel, _ vectors: UnsafeMutableBufferPointer<iovec>, count: Int) throws(SystemError) -> IOResult<Int>
    /// The errno a non-blocking connect ended with, or 0.
    func connectError(_ channel: Channel) -> Int32
    /// Ends the sending direction (after a graceful close has flushed).
    func shutdownSending(_ channel: Channel)
    /// Releases the connection; the channel has left its slot.
    func close(_ channel: Channel)
    /// Caps the send buffer (and the unsent bytes the kernel may hold).
    func setSendBuffer(_ channel: Channel, _ size: SendBufferSize)
    /// Adopts a listening socket.
    func addListener(_ listener: Listener, loop: EventLoop) throws(SystemError)
    /// Stops accepting for good (a shutdown).
    func removeListeners()
    /// Once a second: e.g. accept again after running out of descriptors.
    func tick()
    /// Watches a descriptor other code reads and writes.
    func watch(fd: Int32, loop: EventLoop, handler: @escaping (Bool, Bool) -> Void) throws(SystemError) -> FileWatch
    func update(_ watch: FileWatch)
    func cancel(_ watch: FileWatch)
}
