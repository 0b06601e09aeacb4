import Bytes
import Synchronization
import Testing
@testable import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Accepts from a non-blocking listener, trying every 5 ms; -1 when nothing came.
func acceptConnection(on listener: Int32, tries: Int) -> Int32 {
    for _ in 0..<tries {
        let accepted = accept(listener, nil, nil)
        if accepted >= 0 { return accepted }
        usleep(5_000)
    }
    return -1
}

/// Connects to `port`, sends one byte (the listener accepts a connection when its first bytes
/// arrive) and accepts the connection on `listener`: both ends (the caller closes them).
func acceptedPair(on listener: Int32, port: Int) throws -> (accepted: Int32, client: Int32) {
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    let connected = try SocketAddress.resolve(host: "127.0.0.1", port: port).withSockaddr { connect(client, $0, $1) }
    #expect(connected == 0)
    #expect(send(client, "x", 1, 0) == 1)
    let accepted = acceptConnection(on: listener, tries: 200)
    if accepted < 0 { close(client) }
    try #require(accepted >= 0)
    return (accepted, client)
}

/// `body` with a listener on a free loopback port and one running loop; both are closed when
/// it returns.
func withListenerAndLoop(_ body: (_ listener: Int32, _ port: Int, _ loop: EventLoop) throws -> Void) throws {
    let (listener, port) = try Sockets.listen(host: "127.0.0.1", port: 0)
    defer { close(listener) }
    let group = try EventLoopGroup(count: 1)
    group.start()
    defer { group.shutdown() }
    try body(listener, port, group.loops[0])
}

/// An integer socket option's value, or nil when it cannot be read.
func socketOption(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32? {
    var value: Int32 = 0
    var length = socklen_t(4)
    return getsockopt(fd, level, name, &value, &length) == 0 ? value : nil
}

@Suite("Sockets and write queues")
struct TransportTests {
    /// The server sets TCP_NODELAY once, on its listening socket; this checks the kernel
    /// passes it on to accepted sockets (small frames must not wait for Nagle).
    @Test func acceptedSocketsInheritNoDelay() throws {
        let (listener, port) = try Sockets.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        let (accepted, client) = try acceptedPair(on: listener, port: port)
        defer { close(accepted); close(client) }
        #expect(socketOption(accepted, Int32(IPPROTO_TCP), TCP_NODELAY) == 1)
    }

    /// The server caps a room socket's send buffer and unsent bytes on its listening socket
    /// once; the kernel must copy both to every accepted socket (no setsockopt per join).
    @Test func acceptedSocketsInheritTheSendBuffer() throws {
        let size = SendBufferSize(bytes: 64 << 10, unsent: 4 << 10)
        let (listener, port) = try Sockets.listen(host: "127.0.0.1", port: 0, acceptedSendBuffer: size)
        defer { close(listener) }
        let (plainListener, plainPort) = try Sockets.listen(host: "127.0.0.1", port: 0)
        defer { close(plainListener) }
        let capped = try acceptedPair(on: listener, port: port)
        defer { close(capped.accepted); close(capped.client) }
        let plain = try acceptedPair(on: plainListener, port: plainPort)
        defer { close(plain.accepted); close(plain.client) }
        let unsentLimit: Int32 = 25  // TCP_NOTSENT_LOWAT
        #expect(socketOption(capped.accepted, SOL_SOCKET, SO_SNDBUF) == 2 * Int32(size.bytes), "Linux doubles SO_SNDBUF for its bookkeeping")
        #expect(socketOption(capped.accepted, Int32(IPPROTO_TCP), unsentLimit) == Int32(size.unsent!))
        #expect(socketOption(plain.accepted, Int32(IPPROTO_TCP), unsentLimit) == 0, "no unsent limit unless asked")
        #expect(socketOption(plain.accepted, SOL_SOCKET, SO_SNDBUF) != 2 * Int32(size.bytes))
    }

    /// A connection is accepted when its first bytes arrive, not at the end of the TCP
    /// handshake: the server then reads its request in the wake-up that accepts it.
    @Test func aConnectionIsAcceptedWhenItsFirstBytesArrive() throws {
        let (listener, port) = try Sockets.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        let connected = try SocketAddress.resolve(host: "127.0.0.1", port: port).withSockaddr { connect(client, $0, $1) }
        try #require(connected == 0, "the client's handshake completes at once")
        let early = accept(listener, nil, nil)
        let earlyError = errno
        if early >= 0 { close(early) }
        #expect(early < 0 && earlyError == EAGAIN, "not accepted before its first bytes")
        #expect(send(client, "GET", 3, 0) == 3)
        let accepted = acceptConnection(on: listener, tries: 200)
        try #require(accepted >= 0)
        defer { close(accepted) }
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(recv(accepted, &buffer, 8, Int32(MSG_DONTWAIT)) == 3, "its bytes are there when it is accepted")
    }

    /// A peer's address is written without inet_ntop for IPv4: every octet's width, and IPv6 as before.
    @Test(arguments: ["0.0.0.0", "1.2.3.4", "10.0.99.100", "127.0.0.1", "192.168.1.254", "255.255.255.255", "::1", "2001:db8::8:1", "::ffff:10.1.2.3"])
    func peerAddressesAreWrittenAsNumbers(address: String) throws {
        #expect(try SocketAddress.resolve(host: address, port: 80).numericHost == address)
        #expect(try SocketAddress.resolve(host: address, port: 8080).description.hasSuffix(":8080"))
    }

    /// Every loop binds its own SO_REUSEPORT socket, and the kernel would let a second
    /// server on the same port join them and take part of the connections. A group
    /// refuses a port something listens on; its own loops still share theirs.
    @Test func aSecondGroupCannotListenOnATakenPort() throws {
        let first = try EventLoopGroup(count: 2)
        defer { first.shutdown() }
        let port = try first.listen(host: "127.0.0.1", port: 0) { _ in fatalError("no connection is made") }
        let second = try EventLoopGroup(count: 1)
        defer { second.shutdown() }
        var refusal: SystemError?
        do throws(SystemError) {
            try second.listen(host: "127.0.0.1", port: port) { _ in fatalError("no connection is made") }
        } catch {
            refusal = error
        }
        #expect(refusal?.errno == EADDRINUSE, "\(String(describing: refusal))")
    }

    /// The oldest frame is held inline and the rest in order behind it; a partial write
    /// leaves the unsent tail of a frame first.
    @Test func writeQueueKeepsOrderAcrossPartialWrites() {
        var queue = WriteQueue()
        #expect(queue.isEmpty)
        for text in ["one", "two", "three"] { queue.append(SharedBytes(Array(text.utf8))) }
        queue.append(SharedBytes([UInt8]()))  // empty frames are not queued
        #expect(queue.byteCount == 11)
        let iovecs = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 8)
        defer { iovecs.deallocate() }
        #expect(queue.gather(into: iovecs) == 3)
        queue.consume(5)  // "one" and "tw"
        #expect(queue.byteCount == 6)
        #expect(queue.first.map { Array($0) } == Array("o".utf8))
        #expect(queue.gather(into: iovecs) == 2)
        queue.consume(6)
        #expect(queue.isEmpty && queue.byteCount == 0 && queue.first == nil)
        queue.append(SharedBytes(Array("four".utf8)))
        #expect(queue.first.map { Array($0) } == Array("four".utf8))
    }

    /// `gather` gives each queued frame's unsent bytes in order, and no more of them than
    /// there are iovecs.
    @Test func gatherGivesTheUnsentBytesInOrder() {
        var queue = WriteQueue()
        for text in ["one", "two", "three", "four"] { queue.append(SharedBytes(Array(text.utf8))) }
        queue.consume(1)
        func gathered(_ capacity: Int) -> [String] {
            let iovecs = UnsafeMutableBufferPointer<iovec>.allocate(capacity: capacity)
            defer { iovecs.deallocate() }
            return iovecs.prefix(queue.gather(into: iovecs)).map {
                String(decoding: UnsafeRawBufferPointer(start: $0.iov_base, count: $0.iov_len), as: UTF8.self)
            }
        }
        #expect(gathered(8) == ["ne", "two", "three", "four"])
        #expect(gathered(2) == ["ne", "two"])
        #expect(gathered(1) == ["ne"])
        #expect(gathered(0) == [])
        queue.removeAll()
        #expect(gathered(8) == [])
    }
}

@Suite("Loop time")
struct LoopTimeTests {
    /// A room emptied on one loop is checked for idleness on another, whose cached time
    /// may be older: the difference must not underflow (it crashed the server once).
    @Test func elapsedTimeNeverUnderflows() {
        #expect(elapsedNanoseconds(from: 5, to: 12) == 7)
        #expect(elapsedNanoseconds(from: 12, to: 12) == 0)
        #expect(elapsedNanoseconds(from: 13, to: 12) == 0)
        #expect(elapsedNanoseconds(from: .max, to: 0) == 0)
    }
}

@Suite("Timers")
struct TimerTests {
    /// Timers fire soonest first, whatever order they were scheduled in (1,000 of them, so
    /// the insertion search is exercised at depth).
    @Test func timersFireInDeadlineOrder() throws {
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.shutdown() }
        let loop = group.loops[0]
        let fired = Mutex<[Int]>([])
        let delays = (0..<1000).map { ($0 * 7919) % 1000 }  // a permutation of 0..<1000
        loop.execute {
            for delay in delays {
                loop.schedule(after: UInt64(delay) * 20_000) { fired.withLock { $0.append(delay) } }
            }
        }
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while fired.withLock({ $0.count }) < 1000 && monotonicNanoseconds() < deadline { usleep(10_000) }
        #expect(fired.withLock { $0 } == Array(0..<1000))
    }

    /// Timers due at the same time run in the order they were scheduled (they ran newest
    /// first: the cluster simulation's in-order links, which deliver at one time after a
    /// pause, ran a node's commands backwards).
    @Test func timersDueAtOnceFireInTheOrderScheduled() throws {
        let loop = try EventLoop.embedded()
        var fired: [Int] = []
        for index in 0..<100 { loop.schedule(after: UInt64(index % 3) * 1_000) { fired.append(index) } }
        loop.advance(to: loop.now + 10_000)
        let byDeadline = (0..<3).flatMap { due in (0..<100).filter { $0 % 3 == due } }
        #expect(fired == byDeadline)
    }
}

/// Keeps what a server channel reads, and whether it was accepted.
final class ReadRecorder: ChannelHandler, @unchecked Sendable {
    let reads = Mutex<[UInt8]>([])
    let accepted = Atomic<Bool>(false)
    func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) { reads.withLock { $0 += bytes } }
    func channelClosed(_ channel: Channel) {}
}

@Suite("Accepting connections")
struct AcceptErrorTests {
    /// accept(2): errors of one pending connection (it was aborted, or a network error was
    /// pending on it) are skipped and the next one is accepted; only a shortage of
    /// descriptors or memory stops accepting until the next tick.
    @Test(arguments: [ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH])
    func errorsOfOneConnectionDoNotStopTheListener(_ code: Int32) {
        #expect(EpollIO.isConnectionOwnError(code))
    }

    @Test(arguments: [EMFILE, ENFILE, ENOBUFS, ENOMEM, EINVAL])
    func aShortageOfDescriptorsOrMemoryPausesIt(_ code: Int32) {
        #expect(!EpollIO.isConnectionOwnError(code))
    }

    /// A client that stays silent is accepted after the listener's wait with nothing to
    /// read: the server's first read finds nothing, and what the client sends later is read
    /// when epoll says it came.
    @Test func aSilentClientIsAcceptedAndReadWhenItSpeaks() throws {
        let group = try EventLoopGroup(count: 1)
        let recorder = ReadRecorder()
        let port = try group.listen(host: "127.0.0.1", port: 0) { _ in
            recorder.accepted.store(true, ordering: .releasing)
            return recorder
        }
        group.start()
        defer { group.shutdown() }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        let connected = try SocketAddress.resolve(host: "127.0.0.1", port: port).withSockaddr { connect(client, $0, $1) }
        try #require(connected == 0)
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while !recorder.accepted.load(ordering: .acquiring) && monotonicNanoseconds() < deadline { usleep(10_000) }
        let wasAccepted = recorder.accepted.load(ordering: .acquiring)
        try #require(wasAccepted, "a silent client is accepted after the listener's wait")
        #expect(recorder.reads.withLock { $0 }.isEmpty)
        #expect(send(client, "hello", 5, 0) == 5)
        while recorder.reads.withLock({ $0.count }) < 5 && monotonicNanoseconds() < deadline { usleep(5_000) }
        #expect(recorder.reads.withLock { $0 } == Array("hello".utf8))
    }
}

@Suite("Client channels")
struct ClientChannelTests {
    /// Records what a client channel's handler hears, on the loop's thread.
    final class Recorder: ChannelHandler, @unchecked Sendable {
        let first: [UInt8]
        var events: [String] = []
        var received: [UInt8] = []
        var connectReturned = false
        var closedBeforeConnectReturned = false

        init(first: [UInt8]) { self.first = first }

        func channelActive(_ channel: Channel) {
            events.append("active")
            if !first.isEmpty { channel.enqueue(SharedBytes(first)) }
        }
        func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) { received += bytes }
        func channelClosed(_ channel: Channel) {
            events.append("closed \(channel.connectError.map(String.init) ?? "-")")
            if !connectReturned { closedBeforeConnectReturned = true }
        }
    }

    private func connect(port: Int, first: [UInt8], on loop: EventLoop) throws -> Recorder {
        let recorder = Recorder(first: first)
        let address = try SocketAddress.resolve(host: "127.0.0.1", port: port)
        loop.execute {
            _ = try? loop.connect(to: address) { _ in recorder }
            recorder.connectReturned = true
        }
        return recorder
    }

    private func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)
        for _ in 0..<400 {
            loop.execute { result.withLock { $0 = body() } }
            usleep(5_000)
            if let value = result.withLock({ $0 }) { return value }
        }
        return body()
    }

    /// Plain TCP writes as soon as it connects: the bytes queued in `channelActive` reach
    /// the server, the handler hears `channelActive` once, and the answer comes back.
    @Test func firstBytesArriveAndActiveIsHeardOnce() throws {
        try withListenerAndLoop { listener, port, loop in
            let recorder = try connect(port: port, first: Array("hello".utf8), on: loop)
            let accepted = acceptConnection(on: listener, tries: 400)
            try #require(accepted >= 0)
            defer { close(accepted) }
            var buffer = [UInt8](repeating: 0, count: 16)
            let count = recv(accepted, &buffer, 16, 0)
            #expect(Array(buffer.prefix(max(0, count))) == Array("hello".utf8))
            #expect(send(accepted, "back", 4, 0) == 4)
            var answer: [UInt8] = []
            for _ in 0..<400 where answer.count < 4 {
                answer = onLoop(loop) { recorder.received }
                usleep(5_000)
            }
            #expect(answer == Array("back".utf8))
            #expect(onLoop(loop) { recorder.events } == ["active"])
        }
    }

    /// A refused connect ends the channel with ECONNREFUSED, heard once and never before
    /// `connect` has returned (callers may still be setting up).
    @Test(arguments: [[UInt8](), Array("hello".utf8)])
    func aRefusedConnectIsReportedAfterConnectReturns(first: [UInt8]) throws {
        let (listener, port) = try Sockets.listen(host: "127.0.0.1", port: 0)
        close(listener)  // nobody listens there now
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.shutdown() }
        let loop = group.loops[0]
        let recorder = try connect(port: port, first: first, on: loop)
        var events: [String] = []
        for _ in 0..<400 where events.count < 2 {
            events = onLoop(loop) { recorder.events }
            if events.last?.hasPrefix("closed") == true { break }
            usleep(5_000)
        }
        #expect(events == ["active", "closed \(ECONNREFUSED)"])
        #expect(onLoop(loop) { recorder.closedBeforeConnectReturned } == false)
    }
}

@Suite("Writes")
struct WriteTests {
    /// Queues `frames` as soon as it connects, with a small send buffer so that a large
    /// queue leaves in partial writes.
    final class Sender: ChannelHandler, @unchecked Sendable {
        let frames: [[UInt8]]
        init(frames: [[UInt8]]) { self.frames = frames }
        func channelActive(_ channel: Channel) {
            channel.setSendBuffer(SendBufferSize(bytes: 4096))
            for frame in frames { channel.enqueue(SharedBytes(frame)) }
        }
        func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {}
        func channelClosed(_ channel: Channel) {}
    }

    /// Frames queued together leave as one stream, whole and in order, whether a write
    /// copies them into one buffer (small ones, as uWebSockets corks) or hands the kernel a
    /// vector of them (past the copy buffer's 16 KiB, or more frames than a write takes),
    /// and across partial writes to a slow reader.
    @Test(arguments: [[3, 200, 1, 4000], [9000, 9000, 9000], Array(repeating: 700, count: 40), Array(repeating: 90, count: 150), [8 << 10, 8 << 10], [16 << 10, 1], [1, 16 << 10]])
    func queuedFramesArriveWholeAndInOrder(sizes: [Int]) throws {
        let frames = sizes.enumerated().map { frame, size in (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ frame &* 7 &+ 1) } }
        let expected = frames.flatMap { $0 }
        try withListenerAndLoop { listener, port, loop in
            let address = try SocketAddress.resolve(host: "127.0.0.1", port: port)
            let sender = Sender(frames: frames)
            loop.execute { _ = try? loop.connect(to: address) { _ in sender } }
            let accepted = acceptConnection(on: listener, tries: 400)
            try #require(accepted >= 0)
            defer { close(accepted) }
            // Nothing is read until the connection is accepted: with small buffers at both ends,
            // the larger queues fill them and are written in parts.
            var small: Int32 = 4096
            setsockopt(accepted, SOL_SOCKET, SO_RCVBUF, &small, 4)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(accepted, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1500)
            while received.count < expected.count {
                let count = recv(accepted, &chunk, chunk.count, 0)
                if count <= 0 { break }
                received += chunk.prefix(count)
            }
            #expect(received.count == expected.count)
            #expect(received == expected)
        }
    }
}

@Suite("Dirty list")
struct DirtyListTests {
    /// Writes one byte on each tick when armed; on any channel, counts nothing.
    final class TickWriter: ChannelHandler, @unchecked Sendable {
        let armed: Bool
        init(armed: Bool) { self.armed = armed }
        func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer) {}
        func channelClosed(_ channel: Channel) {}
        func channelTick(_ channel: Channel, now: UInt64) {
            if armed { channel.enqueue(SharedBytes([0x74])) }
        }
    }

    /// After one broadcast to more than 1,024 channels, a quiet second lets the loop give the
    /// list's storage back. A channel that a tick dirties at that moment (a ping, say) must
    /// still be written, on that tick and every later one.
    @Test func aChannelDirtiedByATickIsStillWrittenWhenTheListShrinks() throws {
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.shutdown() }
        let loop = group.loops[0]
        let count = 1100
        let peers = Mutex<[Int32]>([])
        let ready = Atomic<Bool>(false)
        loop.execute {
            var channels: [Channel] = []
            var ends: [Int32] = []
            for index in 0..<count {
                var pair: [Int32] = [0, 0]
                guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0,
                      let channel = try? loop.register(fd: pair[0], tls: nil, peerAddress: "test") else { continue }
                channel.handler = TickWriter(armed: index == 0)
                channels.append(channel)
                ends.append(pair[1])
            }
            for channel in channels { channel.enqueue(SharedBytes([0x62])) }  // all dirty at once
            peers.withLock { $0 = ends }
            ready.store(true, ordering: .releasing)
        }
        for _ in 0..<400 where !ready.load(ordering: .acquiring) { usleep(5_000) }
        let ends = peers.withLock { $0 }
        defer { for fd in ends { close(fd) } }
        try #require(ends.count == count)
        // The armed channel's peer: its byte from the broadcast, then one per tick.
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 64)
        // With the list trimmed after the ticks, 2 bytes came and then nothing; 4 means two
        // ticks wrote after the one that trimmed it. 10 s leaves room on a loaded machine.
        let deadline = monotonicNanoseconds() + 10_000_000_000
        while received < 4 && monotonicNanoseconds() < deadline {
            let n = recv(ends[0], &buffer, 64, Int32(MSG_DONTWAIT))
            if n > 0 { received += n } else { usleep(20_000) }
        }
        #expect(received >= 4, "the armed channel wrote \(received) bytes; ticks stopped reaching the socket")
    }
}

@Suite("Write queue")
struct WriteQueueTests {
    static func bytes(_ text: String, replaceable: Bool = false) -> SharedBytes {
        SharedBytes(count: text.utf8.count, replaceable: replaceable) { destination in Array(text.utf8).withUnsafeBytes { destination.copyMemory(from: $0) } }
    }

    static func gathered(_ queue: WriteQueue) -> [String] {
        let iovecs = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 16)
        defer { iovecs.deallocate() }
        return iovecs.prefix(queue.gather(into: iovecs)).map {
            String(decoding: UnsafeRawBufferPointer(start: $0.iov_base, count: $0.iov_len), as: UTF8.self)
        }
    }

    static func contents(_ queue: WriteQueue) -> String {
        var queue = queue
        var out = ""
        while let first = queue.first {
            out += String(decoding: first, as: UTF8.self) + "|"
            queue.consume(first.count)
        }
        return out
    }

    /// A newer replaceable message takes out an older unsent one, keeping everything else in
    /// order; the oldest chunk (perhaps half written) is never taken out.
    @Test func aNewerDocumentReplacesAnUnsentOne() {
        var queue = WriteQueue()
        var replaced = [Bool]()
        for (text, replaceable) in [("doc1", true), ("state1", false), ("doc2", true), ("driver", false), ("doc3", true)] {
            replaced.append(queue.append(Self.bytes(text, replaceable: replaceable)))
        }
        // doc1 is the oldest chunk (kept); doc2 was wholly unsent when doc3 came (replaced).
        #expect(replaced == [false, false, false, false, true])
        #expect(Self.contents(queue) == "doc1|state1|driver|doc3|")
        #expect(queue.byteCount == "doc1state1driverdoc3".utf8.count)
        #expect(Self.gathered(queue) == ["doc1", "state1", "driver", "doc3"], "the addresses gather reads were taken out with doc2")
        queue.consume("doc1st".utf8.count)
        let doc4Replaced = queue.append(Self.bytes("doc4", replaceable: true))
        #expect(doc4Replaced, "doc3 is unsent behind the half-written state1")
        #expect(Self.gathered(queue) == ["ate1", "driver", "doc4"])
    }
}

@Suite("Descriptor table")
struct DescriptorTableTests {
    /// The kernel's table size for this process (`FDSize` in /proc/self/status).
    func tableSize() throws -> Int {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = read(fd, &bytes, bytes.count)
        let status = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("FDSize:") })
        return try #require(Int(line.dropFirst("FDSize:".count).filter { $0 != " " && $0 != "\t" }))
    }

    /// Grown once to what a server may open, so that accepting never waits for it to grow.
    @Test func reservingGrowsTheTableAtOnceWithinTheLimit() throws {
        var limit = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let before = try tableSize()
        let wanted = min(Int(clamping: limit.rlim_cur) - 1, max(4096, before * 2))
        DescriptorTable.reserve(wanted)
        let after = try tableSize()
        #expect(after > wanted, "FDSize \(after) after reserving \(wanted) (was \(before))")
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0 && fd < wanted, "the descriptor it borrowed is free again: the next one is low (\(fd))")
        close(fd)
    }
}
