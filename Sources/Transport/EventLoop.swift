import CLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One loop on one thread: its connections (`Channel`s), tasks, timers, a 64 KiB read
/// buffer they share, and a coarse one-second tick. How it waits and how bytes move is its
/// `LoopIO`: epoll and sockets (`EpollIO`), or in-process connections a test steps
/// (`EmbeddedIO`, `EventLoop.embedded()`); the loop's turn is the same for both.
/// Other threads talk to it only through `execute(_:)`.
public final class EventLoop: @unchecked Sendable {
    public let index: Int
    /// Polls without ever sleeping in `epoll_wait`, spending the whole core. For load
    /// generators with a core of their own: a process that sleeps must be woken for every
    /// message it gets, and on loopback the sender pays for that wake-up and the receiver
    /// adds its own wake-up time to what it measures.
    public let busyPolling: Bool
    /// Monotonic time of the current iteration, in nanoseconds (an embedded loop's own clock).
    public var now: UInt64 { clock }
    /// `now`'s storage: set only between iterations, read whole, so without a run-time
    /// exclusivity check. (Behind a getter: where another module reads a stored property,
    /// the compiler puts the check back.)
    @exclusivity(unchecked) private(set) var clock: UInt64 = monotonicNanoseconds()
    /// Backpressure marks of every channel on this loop. Kept here rather than per channel:
    /// an idle connection costs only memory. Set before the loop has channels (it is read
    /// on every enqueue, so without a run-time exclusivity check).
    @exclusivity(unchecked) public var watermarks = Channel.Watermarks()

    let io: any LoopIO
    let readBuffer: UnsafeMutableRawBufferPointer
    let iovecs: UnsafeMutableBufferPointer<iovec>

    // Loop-thread only and never changed re-entrantly: no run-time exclusivity checks.
    @exclusivity(unchecked) private var slots: [Channel?] = []
    /// Numbers channels, so an event for a closed channel never reaches one that took its
    /// slot (29 bits: the id's top bits mark listeners and watches).
    @exclusivity(unchecked) private var generation: UInt64 = 0
    @exclusivity(unchecked) private var freeSlots: [Int] = []
    @exclusivity(unchecked) private var dirty: [Channel] = []
    /// The most channels dirty at once since the last tick: a list that grew for one large
    /// broadcast gives its storage back when a quiet second shows it is not needed.
    private var dirtyPeak = 0
    private let tasks = Mutex<[@Sendable () -> Void]>([])
    /// Tasks queued from the loop's own thread: no lock, no wake-up needed.
    private var localTasks: [() -> Void] = []
    private var thread: pthread_t?
    private let running = Atomic<Bool>(true)  // only stop() clears it, even before run() starts
    private var nextTick: UInt64 = 0
    /// How late the last tick ran, in nanoseconds: time the loop spent busy past a deadline.
    public let lagNanoseconds = Atomic<UInt64>(0)
    private var tickHandlers: [() -> Void] = []
    /// One-shot timers, soonest last.
    private var timers: [(deadline: UInt64, task: () -> Void)] = []
    static let tickNanoseconds: UInt64 = 1_000_000_000

    /// An embedded loop's clock moves only by `advance(by:)`; it runs on its caller's thread.
    public var isEmbedded: Bool { io is EmbeddedIO }

    init(index: Int, busyPolling: Bool = false, io: any LoopIO) {
        self.index = index
        self.busyPolling = busyPolling
        self.io = io
        readBuffer = .allocate(byteCount: 64 << 10, alignment: 16)
        iovecs = .allocate(capacity: 64)
        nextTick = now + Self.tickNanoseconds
    }

    /// A loop on sockets (epoll), for `EventLoopGroup`.
    convenience init(index: Int, busyPolling: Bool = false) throws(SystemError) {
        self.init(index: index, busyPolling: busyPolling, io: try EpollIO())
    }

    deinit {
        readBuffer.deallocate()
        iovecs.deallocate()
    }

    /// Number of open connections on this loop.
    public var connectionCount: Int { slots.count - freeSlots.count }

    /// Whether the caller runs on this loop's thread.
    public var inEventLoop: Bool {
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Stops a debug build when called off this loop's thread while the loop runs: what a
    /// loop owns (its channels, timers, watches) is touched only there. An embedded loop's
    /// thread is the one that stepped it last (`advance`), and it is checked alike; before
    /// `run()` (or the first step) the thread setting it up may.
    @inline(__always)
    public func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(thread == nil || inEventLoop, "called off the event loop's thread", file: file, line: line)
    }

    /// Runs `task` on this loop's thread, soon (in this iteration when called from the
    /// loop itself). Safe from any thread.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        if inEventLoop {
            localTasks.append(task)
            return
        }
        tasks.withLock { $0.append(task) }
        io.wake()
    }

    /// Runs `body` on every tick of this loop (about once a second). Call on the loop's
    /// thread, or before the loop starts.
    public func onTick(_ body: @escaping () -> Void) {
        assertInEventLoop()
        tickHandlers.append(body)
    }

    /// Runs `task` on this loop after `nanoseconds`. Call on the loop's thread.
    public func schedule(after nanoseconds: UInt64, _ task: @escaping () -> Void) {
        assertInEventLoop()
        let deadline = now &+ min(nanoseconds, UInt64.max / 2)
        // Binary search for the first timer due no later (the array is soonest last), so that
        // thousands of timers (reconnects, slow readers) cost a memmove each, not a scan. Timers
        // due at the same time run in the order they were scheduled (one turn reads the clock
        // once, so timers scheduled in one turn with one delay share a deadline).
        var low = 0
        var high = timers.count
        while low < high {
            let middle = (low + high) / 2
            if timers[middle].deadline <= deadline { high = middle } else { low = middle + 1 }
        }
        timers.insert((deadline, task), at: low)
    }

    // MARK: Registration

    func addListener(_ listener: Listener) throws(SystemError) {
        try io.addListener(listener, loop: self)
    }

    /// Adopts an accepted socket, or a connecting one (`connecting`: watched for writable,
    /// which says the connect finished). With `watch` false the caller adds it to epoll
    /// later (`watch(_:writable:)`).
    func register(fd: Int32, tls: TLSSession?, peerAddress: String, connecting: Bool = false, watch: Bool = true) throws(SystemError) -> Channel {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = slots.count
            slots.append(nil)
        }
        generation = (generation &+ 1) & 0x1FFF_FFFF
        let id = generation << 32 | UInt64(slot)
        let channel = Channel(id: id, fd: fd, tls: tls, peerAddress: peerAddress, loop: self)
        if connecting { channel.startConnecting() }
        slots[slot] = channel
        guard watch else { return channel }
        do {
            try io.add(channel, writable: connecting)
        } catch {
            slots[slot] = nil
            freeSlots.append(slot)
            throw error
        }
        return channel
    }

    /// The open channel with `id`, if it still holds its slot.
    @inline(__always)
    func channel(withID id: UInt64) -> Channel? {
        let slot = Int(id & 0xFFFF_FFFF)
        guard slot < slots.count, let channel = slots[slot], channel.id == id else { return nil }
        return channel
    }

    /// Starts a non-blocking connect to `address` and returns its channel at once
    /// (`receiveBuffer` caps the kernel's receive buffer, e.g. to play a slow reader;
    /// `source` is the local address to connect from, its port chosen at connect time);
    /// the handler hears `channelActive` when it may write, or `channelClosed` (with
    /// `connectError` set) when the connect fails, never before this returns.
    /// Plain TCP writes optimistically: `channelActive` comes at once, and what it queues
    /// is sent right away if the connect has already finished (on loopback it has), or
    /// when it does. Call on this loop's thread.
    public func connect(
        to address: SocketAddress, from source: SocketAddress? = nil, tls: TLSContext? = nil, serverName: String? = nil, verifyHostName: Bool = false,
        receiveBuffer: Int? = nil, makeHandler: (Channel) -> any ChannelHandler
    ) throws -> Channel {
        let fd = try syscallChecked("socket") {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            if var size = receiveBuffer.map(Int32.init(clamping:)) {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4)  // before connect, so the window scale fits
            }
            if let source {
                var on: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_IP), 24 /* IP_BIND_ADDRESS_NO_PORT: the port is picked by connect, per destination */, &on, 4)
                guard source.withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0 else { throw SystemError(call: "bind(\(source))", errno: errno) }
            }
            let result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
            if result != 0 && errno != EINPROGRESS { throw SystemError(call: "connect(\(address))", errno: errno) }
            Sockets.setNoDelay(fd)
            let session = try tls.map { context throws in
                try context.makeSession(isServer: false, serverName: serverName, verifyHostName: verifyHostName)
            }
            let channel = try register(fd: fd, tls: session, peerAddress: address.description, connecting: true,
                                       watch: session != nil)
            channel.handler = makeHandler(channel)
            if session == nil { channel.connectOptimistically() }
            return channel
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Frees the channel's slot; call right before closing its connection.
    func unregister(_ channel: Channel) {
        let slot = Int(channel.id & 0xFFFF_FFFF)
        guard slot < slots.count, slots[slot] === channel else { return }
        slots[slot] = nil
        freeSlots.append(slot)
    }

    func markDirty(_ channel: Channel) {
        assertInEventLoop()
        guard !channel.isDirty else { return }
        channel.isDirty = true
        dirty.append(channel)
    }

    // MARK: Foreign descriptors

    /// Watches a descriptor that other code reads and writes (a library's socket): the
    /// handler hears `(readable, writable)` for the interests set with `FileWatch.update`.
    /// Call on this loop's thread; `cancel()` before the descriptor is closed.
    public func watch(fd: Int32, handler: @escaping (_ readable: Bool, _ writable: Bool) -> Void) throws(SystemError) -> FileWatch {
        assertInEventLoop()
        return try io.watch(fd: fd, loop: self, handler: handler)
    }

    // MARK: Embedded

    /// A loop for tests that steps only when the caller says (`advance`), on the caller's
    /// thread, with a clock of its own; its channels' far ends are `EmbeddedConnection`s.
    public static func embedded() throws(SystemError) -> EventLoop {
        EventLoop(index: 0, io: try EmbeddedIO())
    }

    /// The same, its clock starting at `start` instead of the monotonic clock's time: a
    /// simulation whose every run must be the same (its times, and what is computed from them,
    /// would otherwise depend on when it ran).
    public static func embedded(startingAt start: UInt64) throws(SystemError) -> EventLoop {
        let loop = try embedded()
        loop.clock = start
        loop.nextTick = start + tickNanoseconds
        return loop
    }

    /// Moves the clock by `nanoseconds` and runs everything due: tasks (other threads' too),
    /// timers, pending reads, flushes, and the one-second tick when it is due.
    public func advance(by nanoseconds: UInt64 = 0) {
        precondition(isEmbedded, "advance(by:) steps an embedded loop")
        thread = pthread_self()
        clock &+= nanoseconds
        repeat {
            io.poll(self, timeoutMilliseconds: 0)
            finishTurn()
        } while !localTasks.isEmpty || timers.last.map({ $0.deadline <= now }) == true || (io as? EmbeddedIO)?.takeArrivals() == true
    }

    /// Moves the clock to `deadline` one due timer (or tick) at a time, so each runs at its own
    /// time rather than all at the end (a simulation's virtual time).
    public func advance(to deadline: UInt64) {
        advance()  // tasks queued before: the timers they set may fall before the deadline
        while now < deadline {
            let next = min(deadline, nextTick, timers.last?.deadline ?? deadline)
            advance(by: next > now ? next - now : 0)
        }
    }

    /// Steps the loop until `condition` holds, waiting (up to `timeout` seconds of real
    /// time) for tasks other threads send it (e.g. a key hashed on a thread of its own).
    @discardableResult
    public func advance(until condition: () -> Bool, timeout: Double = 10) -> Bool {
        let deadline = monotonicNanoseconds() + UInt64(timeout * 1e9)
        advance()
        while !condition() {
            let left = Int64(deadline) - Int64(monotonicNanoseconds())
            guard left > 0 else { return false }
            io.poll(self, timeoutMilliseconds: Int32(min(left / 1_000_000 + 1, 100)))
            advance()
        }
        return true
    }

    // MARK: Running

    /// Runs until `stop()`. Call on the loop's own thread.
    func run() {
        thread = pthread_self()
        clock = monotonicNanoseconds()
        nextTick = now + Self.tickNanoseconds
        while running.load(ordering: .acquiring) {
            let wake = min(nextTick, timers.last?.deadline ?? nextTick)
            let timeout = Int32(max(0, min(Int64(Self.tickNanoseconds), Int64(wake) - Int64(now))) / 1_000_000) + 1
            io.poll(self, timeoutMilliseconds: localTasks.isEmpty && !busyPolling ? timeout : 0)
            clock = monotonicNanoseconds()
            finishTurn()
        }
        for channel in slots.compactMap({ $0 }) { channel.abort() }
        // What would never run now: let go of it (a closure may hold a channel, which holds this loop).
        timers.removeAll()
        localTasks.removeAll()
        tasks.withLock { $0.removeAll() }
        dirty.removeAll()
    }

    /// Stops accepting and asks every connection's handler to close. Call on the loop's thread.
    public func beginShutdown() {
        io.removeListeners()
        for case let channel? in slots { channel.handler?.channelShutdownRequested(channel) }
    }

    /// Asks the loop to return from `run()`. Safe from any thread.
    func stop() {
        running.store(false, ordering: .releasing)
        execute {}
    }

    /// The loop's turn after its I/O (`run` and `advance` alike): tasks, due timers, the
    /// writes they queued, and the tick when it is due.
    private func finishTurn() {
        runTasks()
        while let timer = timers.last, timer.deadline <= now {
            timers.removeLast()
            timer.task()
        }
        flushDirty()
        if now >= nextTick {
            lagNanoseconds.store(now - nextTick, ordering: .relaxed)
            nextTick = now + Self.tickNanoseconds
            tick()
            flushDirty()
        }
    }

    private func runTasks() {
        while !localTasks.isEmpty {
            let batch = localTasks
            localTasks.removeAll()
            for task in batch { task() }
        }
        let pending = tasks.withLock { tasks -> [@Sendable () -> Void] in
            let taken = tasks
            tasks.removeAll()
            return taken
        }
        for task in pending { task() }
    }

    private func flushDirty() {
        var i = 0
        while i < dirty.count {  // a flush may dirty another channel
            let channel = dirty[i]
            channel.isDirty = false
            channel.flush()
            i += 1
        }
        dirtyPeak = max(dirtyPeak, dirty.count)
        dirty.removeAll(keepingCapacity: true)
    }

    private func tick() {
        io.tick()
        // Before the channels' ticks, which may dirty some: the list is empty here.
        if dirty.isEmpty && dirty.capacity > 1024 && dirtyPeak < dirty.capacity / 4 {
            dirty = []
            dirty.reserveCapacity(dirtyPeak)
        }
        dirtyPeak = 0
        for case let channel? in slots { channel.tick(now: now) }
        for handler in tickHandlers { handler() }
    }
}

extension Channel {
    var isRegistered: Bool { state != .closed }
}
