import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// One event loop per core, each on its own thread.
public final class EventLoopGroup: @unchecked Sendable {
    public let loops: [EventLoop]
    private var threads: [pthread_t] = []

    /// - Parameters:
    ///   - count: loops to run; defaults to one per available core.
    ///   - busyPolling: loops never sleep in `epoll_wait`; see `EventLoop.busyPolling`.
    public init(count: Int = EventLoopGroup.coreCount, busyPolling: Bool = false) throws(SystemError) {
        signal(SIGPIPE, SIG_IGN)  // a peer that vanishes must not kill the process
        var loops = [EventLoop]()
        for index in 0..<max(1, count) { loops.append(try EventLoop(index: index, busyPolling: busyPolling)) }
        self.loops = loops
    }

    /// A group of loops made elsewhere (e.g. one `EventLoop.embedded()`, never started).
    public init(loops: [EventLoop]) {
        self.loops = loops
    }

    /// Cores this process may run on.
    public static var coreCount: Int {
        let allowed = Int(scrollsync_allowed_cpu_count())
        return allowed > 0 ? allowed : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// Listens on `host:port` with one SO_REUSEPORT socket per loop, before `start()`.
    /// Port 0 picks a free port. Returns the port bound. Fails with EADDRINUSE when another
    /// process listens there already, rather than sharing its connections.
    /// `makeHandler` runs on the accepting loop's thread for each new connection. Accepted
    /// sockets start with `acceptedSendBuffer` (the kernel copies the listening socket's).
    @discardableResult
    public func listen(
        host: String, port: Int, tls: TLSContext? = nil, acceptedSendBuffer: SendBufferSize? = nil,
        makeHandler: @escaping @Sendable (Channel) -> any ChannelHandler
    ) throws(SystemError) -> Int {
        if port != 0 { try Sockets.checkFree(host: host, port: port) }
        var boundPort = port
        for loop in loops {
            let (fd, actual) = try Sockets.listen(host: host, port: boundPort, acceptedSendBuffer: acceptedSendBuffer)
            boundPort = actual
            try loop.addListener(Listener(fd: fd, tls: tls, makeHandler: makeHandler))
        }
        return boundPort
    }

    /// Starts every loop on a thread of its own.
    public func start() {
        for loop in loops {
            threads.append(spawnThread { loop.run() })
        }
    }

    /// Stops accepting on every loop and asks every connection to close.
    public func beginShutdown() {
        for loop in loops { loop.execute { loop.beginShutdown() } }
    }

    /// Stops every loop (open connections are dropped) and waits for the threads.
    public func shutdown() {
        for loop in loops { loop.stop() }
        for thread in threads { pthread_join(thread, nil) }
        threads.removeAll()
    }
}

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// Starts a thread running `body`; join or detach the result.
public func spawnThread(_ body: @escaping () -> Void) -> pthread_t {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { argument in
        let body = Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue()
        body.run()
        return nil
    }, context)
    precondition(status == 0, "pthread_create failed (\(status))")
    return thread
}
