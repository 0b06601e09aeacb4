import CLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One epoll loop on one thread. It owns its listening socket (SO_REUSEPORT), its
/// connections, a 64 KiB read buffer they share, and a coarse one-second timer.
/// Other threads talk to it only through `execute(_:)`, which wakes it with an eventfd.
public final class EventLoop: @unchecked Sendable {
    public let index: Int
    /// Polls without ever sleeping in `epoll_wait`, spending the whole core. For load
    /// generators with a core of their own: a process that sleeps must be woken for every
    /// message it gets, and on loopback the sender pays for that wake-up and the receiver
    /// adds its own wake-up time to what it measures.
    public let busyPolling: Bool
    /// Monotonic time of the current iteration, in nanoseconds.
    public private(set) var now: UInt64 = monotonicNanoseconds()
    /// Backpressure marks of every channel on this loop. Kept here rather than per channel:
    /// an idle connection costs only memory. Set before the loop has channels (it is read
    /// on every enqueue, so without a run-time exclusivity check).
    @exclusivity(unchecked) public var watermarks = Channel.Watermarks()

    let readBuffer: UnsafeMutableRawBufferPointer
    let iovecs: UnsafeMutableBufferPointer<iovec>

    private let epoll: Int32
    private let wake: Int32
    // Loop-thread only and never changed re-entrantly: no run-time exclusivity checks.
    @exclusivity(unchecked) private var slots: [Channel?] = []
    /// Numbers channels, so an event for a closed channel never reaches one that took its
    /// slot (29 bits: the id's top bits mark listeners and watches).
    private var generation: UInt64 = 0
    private var freeSlots: [Int] = []
    private var listeners: [Listener] = []
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
    private var listenersPaused = false
    private var watchGeneration: UInt64 = 0
    private var tickHandlers: [() -> Void] = []
    /// One-shot timers, soonest last.
    private var timers: [(deadline: UInt64, task: () -> Void)] = []

    private static let wakeID = UInt64.max
    private static let listenerFlag: UInt64 = 1 << 62
    private static let watchFlag: UInt64 = 1 << 61
    /// An embedded loop's clock moves only by `advance(by:)`; it runs on its caller's thread.
    public let isEmbedded: Bool
    private var embeddedConnections: [EmbeddedConnection] = []
    private var embeddedByChannel: [UInt64: EmbeddedConnection] = [:]

    func embeddedConnection(of channel: Channel) -> EmbeddedConnection? { embeddedByChannel[channel.id] }
    /// Descriptors other code drives (e.g. a Redis client), by slot.
    private var watches: [FileWatch?] = []
    static let tickNanoseconds: UInt64 = 1_000_000_000

    init(index: Int, busyPolling: Bool = false, embedded: Bool = false) throws(SystemError) {
        self.index = index
        self.busyPolling = busyPolling
        isEmbedded = embedded
        epoll = try syscallChecked("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        wake = try syscallChecked("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        readBuffer = .allocate(byteCount: 64 << 10, alignment: 16)
        iovecs = .allocate(capacity: 64)
        try control(EPOLL_CTL_ADD, fd: wake, events: EPOLLIN.rawValue, id: Self.wakeID)
    }

    deinit {
        close(epoll)
        close(wake)
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
    /// loop owns (its channels, timers, watches) is touched only there. An embedded loop runs
    /// on the thread that steps it; before `run()` the thread setting it up may.
    @inline(__always)
    public func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(isEmbedded || thread == nil || inEventLoop, "called off the event loop's thread", file: file, line: line)
    }

    /// Runs `task` on this loop's thread, soon (in this iteration when called from the
    /// loop itself). Safe from any thread.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        if inEventLoop {
            localTasks.append(task)
            return
        }
        tasks.withLock { $0.append(task) }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
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
        // Binary search for the first timer due sooner (the array is soonest last), so that
        // thousands of timers (reconnects, slow readers) cost a memmove each, not a scan.
        var low = 0
        var high = timers.count
        while low < high {
            let middle = (low + high) / 2
            if timers[middle].deadline < deadline { high = middle } else { low = middle + 1 }
        }
        timers.insert((deadline, task), at: low)
    }

    // MARK: Registration

    func addListener(_ listener: Listener) throws(SystemError) {
        listeners.append(listener)
        try control(EPOLL_CTL_ADD, fd: listener.fd, events: EPOLLIN.rawValue, id: Self.listenerFlag | UInt64(listeners.count - 1))
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
            try self.watch(channel, writable: connecting)
        } catch {
            slots[slot] = nil
            freeSlots.append(slot)
            throw error
        }
        return channel
    }

    /// Adds a registered channel's socket to epoll: readable always, writable on request.
    func watch(_ channel: Channel, writable: Bool) throws(SystemError) {
        let events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (writable ? EPOLLOUT.rawValue : 0)
        try control(EPOLL_CTL_ADD, fd: channel.fd, events: events, id: channel.id)
    }

    /// Starts a non-blocking connect to `address` and returns its channel at once
    /// (`receiveBuffer` caps the kernel's receive buffer, e.g. to play a slow reader);
    /// the handler hears `channelActive` when it may write, or `channelClosed` (with
    /// `connectError` set) when the connect fails, never before this returns.
    /// Plain TCP writes optimistically: `channelActive` comes at once, and what it queues
    /// is sent right away if the connect has already finished (on loopback it has), or
    /// when it does. Call on this loop's thread.
    public func connect(
        to address: SocketAddress, tls: TLSContext? = nil, serverName: String? = nil, verifyHostName: Bool = false, receiveBuffer: Int? = nil,
        makeHandler: (Channel) -> any ChannelHandler
    ) throws -> Channel {
        let fd = try syscallChecked("socket") {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            if var size = receiveBuffer.map(Int32.init(clamping:)) {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4)  // before connect, so the window scale fits
            }
            let result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
            if result != 0 && errno != EINPROGRESS { throw SystemError(call: "connect(\(address))", errno: errno) }
            Sockets.setNoDelay(fd)
            let session = try tls.map { context throws in
                try context.makeSession(fd: fd, isServer: false, serverName: serverName, verifyHostName: verifyHostName)
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

    /// Frees the channel's slot; call right before closing its socket. The close takes the
    /// socket out of epoll (no descriptor is ever duplicated), so no EPOLL_CTL_DEL is made;
    /// an event already fetched for it finds the slot's generation changed.
    func unregister(_ channel: Channel) {
        let slot = Int(channel.id & 0xFFFF_FFFF)
        guard slot < slots.count, slots[slot] === channel else { return }
        slots[slot] = nil
        freeSlots.append(slot)
    }

    func modify(_ channel: Channel, readable: Bool, writable: Bool) {
        var events: UInt32 = EPOLLRDHUP.rawValue
        if readable { events |= EPOLLIN.rawValue }
        if writable { events |= EPOLLOUT.rawValue }
        try? control(EPOLL_CTL_MOD, fd: channel.fd, events: events, id: channel.id)
    }

    func markDirty(_ channel: Channel) {
        assertInEventLoop()
        guard !channel.isDirty else { return }
        channel.isDirty = true
        dirty.append(channel)
    }

    private func control(_ op: Int32, fd: Int32, events: UInt32, id: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = id
        try syscallChecked("epoll_ctl") { epoll_ctl(epoll, op, fd, &event) }
    }

    // MARK: Foreign descriptors

    /// Watches a descriptor that other code reads and writes (a library's socket): the
    /// handler hears `(readable, writable)` for the interests set with `FileWatch.update`.
    /// Call on this loop's thread; `cancel()` before the descriptor is closed.
    public func watch(fd: Int32, handler: @escaping (_ readable: Bool, _ writable: Bool) -> Void) throws(SystemError) -> FileWatch {
        let index = watches.firstIndex { $0 == nil } ?? watches.count
        if index == watches.count { watches.append(nil) }
        watchGeneration &+= 1
        let id = Self.watchFlag | UInt64(watchGeneration & 0xFFFF) << 32 | UInt64(index)
        let watch = FileWatch(id: id, fd: fd, loop: self, handler: handler)
        try control(EPOLL_CTL_ADD, fd: fd, events: 0, id: id)
        watches[index] = watch
        return watch
    }

    fileprivate func update(_ watch: FileWatch) {
        var events: UInt32 = 0
        if watch.readable { events |= EPOLLIN.rawValue }
        if watch.writable { events |= EPOLLOUT.rawValue }
        try? control(EPOLL_CTL_MOD, fd: watch.fd, events: events, id: watch.id)
    }

    fileprivate func cancel(_ watch: FileWatch) {
        let index = Int(watch.id & 0xFFFF_FFFF)
        guard index < watches.count, watches[index] === watch else { return }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, watch.fd, nil)
        watches[index] = nil
    }

    // MARK: Embedded

    /// A loop for tests that steps only when the caller says (`advance`), on the caller's
    /// thread, with a clock of its own; its channels are `EmbeddedConnection`s, not sockets.
    public static func embedded() throws(SystemError) -> EventLoop {
        let loop = try EventLoop(index: 0, embedded: true)
        loop.nextTick = loop.now + tickNanoseconds
        return loop
    }

    /// An in-process connection whose handler `makeHandler` makes, as an accepted socket's.
    public func connectEmbedded(peerAddress: String = "127.0.0.1", makeHandler: (Channel) -> any ChannelHandler) -> EmbeddedConnection {
        precondition(isEmbedded, "only an embedded loop has in-process connections")
        // Registering a channel without a descriptor cannot fail.
        let channel = try! register(fd: -1, tls: nil, peerAddress: peerAddress, watch: false)
        let connection = EmbeddedConnection(channel: channel)
        embeddedByChannel[channel.id] = connection
        embeddedConnections.append(connection)
        channel.handler = makeHandler(channel)
        return connection
    }

    /// Moves the clock by `nanoseconds` and runs everything due: tasks (other threads' too),
    /// timers, pending reads, flushes, and the one-second tick when it is due.
    public func advance(by nanoseconds: UInt64 = 0) {
        precondition(isEmbedded, "advance(by:) steps an embedded loop")
        thread = pthread_self()
        now &+= nanoseconds
        repeat {
            // The in-process connections' reads stand for epoll's events; the rest of the turn
            // is the running loop's own.
            for connection in embeddedConnections where connection.closed { embeddedByChannel[connection.channel.id] = nil }
            embeddedConnections.removeAll { $0.closed }
            for connection in embeddedConnections { connection.deliver() }
            finishTurn()
        } while !localTasks.isEmpty || timers.last.map({ $0.deadline <= now }) == true
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
            var descriptor = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, Int32(min(left / 1_000_000 + 1, 100))) > 0 {
                var value: UInt64 = 0
                _ = read(wake, &value, 8)
            }
            advance()
        }
        return true
    }

    // MARK: Running

    /// Runs until `stop()`. Call on the loop's own thread.
    func run() {
        thread = pthread_self()
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        now = monotonicNanoseconds()
        nextTick = now + Self.tickNanoseconds
        while running.load(ordering: .acquiring) {
            let wake = min(nextTick, timers.last?.deadline ?? nextTick)
            let timeout = Int32(max(0, min(Int64(Self.tickNanoseconds), Int64(wake) - Int64(now))) / 1_000_000) + 1
            let count = epoll_wait(epoll, events, Int32(capacity), localTasks.isEmpty && !busyPolling ? timeout : 0)
            now = monotonicNanoseconds()
            if count > 0 {
                for i in 0..<Int(count) { dispatch(events[i]) }
            }
            finishTurn()
        }
        for channel in slots.compactMap({ $0 }) { channel.abort() }
    }

    /// Stops accepting and asks every connection's handler to close. Call on the loop's thread.
    public func beginShutdown() {
        for listener in listeners { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, listener.fd, nil) }
        listeners.removeAll()  // closes the sockets
        for case let channel? in slots { channel.handler?.channelShutdownRequested(channel) }
    }

    /// Asks the loop to return from `run()`. Safe from any thread.
    func stop() {
        running.store(false, ordering: .releasing)
        execute {}
    }

    private func dispatch(_ event: epoll_event) {
        let id = event.data.u64
        if id == Self.wakeID {
            var value: UInt64 = 0
            _ = read(wake, &value, 8)
            return
        }
        if id & Self.watchFlag != 0 && id & Self.listenerFlag == 0 {
            let index = Int(id & 0xFFFF_FFFF)
            guard index < watches.count, let watch = watches[index], watch.id == id else { return }
            let flags = event.events
            let failed = flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
            watch.handler(flags & EPOLLIN.rawValue != 0 || failed, flags & EPOLLOUT.rawValue != 0 || failed)
            return
        }
        if id & Self.listenerFlag != 0 && id != Self.wakeID {
            let index = Int(id & 0xFFFF)
            if index < listeners.count { acceptAll(listeners[index]) }
            return
        }
        let slot = Int(id & 0xFFFF_FFFF)
        guard slot < slots.count, let channel = slots[slot], channel.id == id else { return }
        let flags = event.events
        if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 && flags & EPOLLIN.rawValue == 0 {
            channel.hangUp()
            return
        }
        if flags & EPOLLOUT.rawValue != 0 { channel.writable() }
        if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0, channel.isRegistered { channel.readable() }
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
        if listenersPaused {
            listenersPaused = false
            for (index, listener) in listeners.enumerated() {
                try? control(EPOLL_CTL_MOD, fd: listener.fd, events: EPOLLIN.rawValue, id: Self.listenerFlag | UInt64(index))
            }
        }
        // Before the channels' ticks, which may dirty some: the list is empty here.
        if dirty.isEmpty && dirty.capacity > 1024 && dirtyPeak < dirty.capacity / 4 {
            dirty = []
            dirty.reserveCapacity(dirtyPeak)
        }
        dirtyPeak = 0
        for case let channel? in slots { channel.tick(now: now) }
        for handler in tickHandlers { handler() }
    }

    private func acceptAll(_ listener: Listener) {
        for _ in 0..<64 {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let result = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                    Result { () throws(SystemError) in
                        try syscall("accept4") {
                            accept4(listener.fd, sockaddrPointer, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                        }
                    }
                }
            }
            switch result {
            case .success(.done(let fd)):
                listener.adopt(fd: fd, peer: Sockets.describe(address), on: self)
            case .success(.wouldBlock):
                return
            case .failure(let error) where Self.isConnectionOwnError(error.errno):
                continue  // that connection is gone; the next one may be fine
            case .failure:
                // Out of descriptors (EMFILE) or memory: stop accepting until the next tick.
                pauseListeners()
                return
            }
        }
    }

    /// Errors `accept4` reports for one pending connection rather than for the listener:
    /// the peer aborted it, or a network error already pending on it (accept(2): Linux
    /// passes those on, and the caller should treat them like EAGAIN and accept again).
    static func isConnectionOwnError(_ code: Int32) -> Bool {
        switch code {
        case ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH: true
        default: false
        }
    }

    private func pauseListeners() {
        guard !listenersPaused else { return }
        listenersPaused = true
        for listener in listeners { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, listener.fd, nil) }
        for (index, listener) in listeners.enumerated() {
            var event = epoll_event()
            event.events = 0
            event.data.u64 = Self.listenerFlag | UInt64(index)
            _ = epoll_ctl(epoll, EPOLL_CTL_ADD, listener.fd, &event)
        }
    }
}

extension Channel {
    var isRegistered: Bool { state != .closed }
}

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
        loop.update(self)
    }

    /// Stops watching; call before the descriptor is closed.
    public func cancel() {
        loop.assertInEventLoop()
        loop.cancel(self)
    }
}
