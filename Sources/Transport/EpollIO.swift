import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// A loop's sockets through epoll: its listening sockets (SO_REUSEPORT, accepted 64 per
/// wake-up), its connections, the descriptors it watches for other code, and an eventfd that
/// other threads write to wake it.
final class EpollIO: LoopIO {
    private let epoll: Int32
    private let wakeDescriptor: Int32
    private var listeners: [Listener] = []
    private var listenersPaused = false
    /// Descriptors other code drives (e.g. a Redis client), by slot.
    private var watches: [FileWatch?] = []
    private var watchGeneration: UInt64 = 0
    private let events: UnsafeMutablePointer<epoll_event>
    private static let capacity = 256
    /// Several small frames are copied here and sent as one buffer (as uWebSockets corks):
    /// cheaper for the kernel than a vector of them, whose segments it walks one by one.
    private let cork = UnsafeMutableRawBufferPointer.allocate(byteCount: EpollIO.corkCapacity, alignment: 16)
    private static let corkCapacity = 16 << 10

    private static let wakeID = UInt64.max
    private static let listenerFlag: UInt64 = 1 << 62
    private static let watchFlag: UInt64 = 1 << 61

    init() throws(SystemError) {
        epoll = try syscallChecked("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        do {
            wakeDescriptor = try syscallChecked("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        } catch {
            Glibc.close(epoll)
            throw error
        }
        events = .allocate(capacity: Self.capacity)
        try control(EPOLL_CTL_ADD, fd: wakeDescriptor, events: EPOLLIN.rawValue, id: Self.wakeID)
    }

    deinit {
        Glibc.close(epoll)
        Glibc.close(wakeDescriptor)
        events.deallocate()
        cork.deallocate()
    }

    // MARK: Waiting

    func poll(_ loop: EventLoop, timeoutMilliseconds: Int32) {
        let count = epoll_wait(epoll, events, Int32(Self.capacity), timeoutMilliseconds)
        for i in 0..<max(0, Int(count)) { dispatch(events[i], loop: loop) }
    }

    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeDescriptor, &one, 8)
    }

    private func dispatch(_ event: epoll_event, loop: EventLoop) {
        let id = event.data.u64
        let flags = event.events
        if id == Self.wakeID {
            var value: UInt64 = 0
            _ = Glibc.read(wakeDescriptor, &value, 8)
        } else if id & Self.listenerFlag != 0 {
            let index = Int(id & 0xFFFF)
            if index < listeners.count { acceptAll(listeners[index], loop: loop) }
        } else if id & Self.watchFlag != 0 {
            let index = Int(id & 0xFFFF_FFFF)
            guard index < watches.count, let watch = watches[index], watch.id == id else { return }
            let failed = flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
            watch.handler(flags & EPOLLIN.rawValue != 0 || failed, flags & EPOLLOUT.rawValue != 0 || failed)
        } else if let channel = loop.channel(withID: id) {
            if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 && flags & EPOLLIN.rawValue == 0 {
                channel.hangUp()
                return
            }
            if flags & EPOLLOUT.rawValue != 0 { channel.writable() }
            if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0, channel.isRegistered { channel.readable() }
        }
    }

    // MARK: Connections

    func add(_ channel: Channel, writable: Bool) throws(SystemError) {
        let events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (writable ? EPOLLOUT.rawValue : 0)
        try control(EPOLL_CTL_ADD, fd: channel.fd, events: events, id: channel.id)
    }

    func setInterest(_ channel: Channel, readable: Bool, writable: Bool) {
        var events: UInt32 = EPOLLRDHUP.rawValue
        if readable { events |= EPOLLIN.rawValue }
        if writable { events |= EPOLLOUT.rawValue }
        try? control(EPOLL_CTL_MOD, fd: channel.fd, events: events, id: channel.id)
    }

    @inline(__always)
    func read(_ channel: Channel, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("recv") { recv(channel.fd, buffer.baseAddress, buffer.count, 0) }
    }

    @inline(__always)
    func write(_ channel: Channel, _ vectors: UnsafeMutableBufferPointer<iovec>, count: Int) throws(SystemError) -> IOResult<Int> {
        // send/sendmsg rather than write/writev: the socket call skips the file layer.
        if count == 1 {
            let only = vectors[0]
            return try syscall("send") { send(channel.fd, only.iov_base, only.iov_len, Int32(MSG_NOSIGNAL)) }
        }
        var total = 0
        for index in 0..<count { total += vectors[index].iov_len }
        if total <= cork.count {
            var position = 0
            for index in 0..<count {
                let vector = vectors[index]
                (cork.baseAddress! + position).copyMemory(from: vector.iov_base!, byteCount: vector.iov_len)
                position += vector.iov_len
            }
            return try syscall("send") { send(channel.fd, cork.baseAddress, total, Int32(MSG_NOSIGNAL)) }
        }
        var message = msghdr()
        message.msg_iov = vectors.baseAddress
        message.msg_iovlen = count
        return try syscall("sendmsg") { sendmsg(channel.fd, &message, Int32(MSG_NOSIGNAL)) }
    }

    func connectError(_ channel: Channel) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(4)
        getsockopt(channel.fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error
    }

    func shutdownSending(_ channel: Channel) { Glibc.shutdown(channel.fd, Int32(SHUT_WR)) }

    /// The close takes the socket out of epoll (no descriptor is ever duplicated), so no
    /// EPOLL_CTL_DEL is made; an event already fetched for it finds its slot's id changed.
    func close(_ channel: Channel) { Glibc.close(channel.fd) }

    func setSendBuffer(_ channel: Channel, _ size: SendBufferSize) { Sockets.setSendBuffer(channel.fd, size) }

    // MARK: Listening

    func addListener(_ listener: Listener, loop: EventLoop) throws(SystemError) {
        listeners.append(listener)
        try control(EPOLL_CTL_ADD, fd: listener.fd, events: EPOLLIN.rawValue, id: Self.listenerFlag | UInt64(listeners.count - 1))
    }

    func removeListeners() {
        for listener in listeners { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, listener.fd, nil) }
        listeners.removeAll()  // closes the sockets
    }

    func tick() {
        guard listenersPaused else { return }
        listenersPaused = false
        for (index, listener) in listeners.enumerated() {
            try? control(EPOLL_CTL_MOD, fd: listener.fd, events: EPOLLIN.rawValue, id: Self.listenerFlag | UInt64(index))
        }
    }

    private func acceptAll(_ listener: Listener, loop: EventLoop) {
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
                listener.adopt(fd: fd, peer: Sockets.describe(address), on: loop)
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
        for (index, listener) in listeners.enumerated() {
            try? control(EPOLL_CTL_MOD, fd: listener.fd, events: 0, id: Self.listenerFlag | UInt64(index))
        }
    }

    // MARK: Foreign descriptors

    func watch(fd: Int32, loop: EventLoop, handler: @escaping (Bool, Bool) -> Void) throws(SystemError) -> FileWatch {
        let index = watches.firstIndex { $0 == nil } ?? watches.count
        if index == watches.count { watches.append(nil) }
        watchGeneration &+= 1
        let id = Self.watchFlag | UInt64(watchGeneration & 0xFFFF) << 32 | UInt64(index)
        let watch = FileWatch(id: id, fd: fd, loop: loop, handler: handler)
        try control(EPOLL_CTL_ADD, fd: fd, events: 0, id: id)
        watches[index] = watch
        return watch
    }

    func update(_ watch: FileWatch) {
        var events: UInt32 = 0
        if watch.readable { events |= EPOLLIN.rawValue }
        if watch.writable { events |= EPOLLOUT.rawValue }
        try? control(EPOLL_CTL_MOD, fd: watch.fd, events: events, id: watch.id)
    }

    func cancel(_ watch: FileWatch) {
        let index = Int(watch.id & 0xFFFF_FFFF)
        guard index < watches.count, watches[index] === watch else { return }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, watch.fd, nil)
        watches[index] = nil
    }

    private func control(_ op: Int32, fd: Int32, events: UInt32, id: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = id
        try syscallChecked("epoll_ctl") { epoll_ctl(epoll, op, fd, &event) }
    }
}
