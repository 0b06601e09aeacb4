import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// A socket's send buffer (SO_SNDBUF) and the unsent bytes it may hold (TCP_NOTSENT_LOWAT,
/// nil: the system's default).
public struct SendBufferSize: Sendable, Equatable {
    public var bytes: Int
    public var unsent: Int?

    public init(bytes: Int, unsent: Int? = nil) {
        self.bytes = bytes
        self.unsent = unsent
    }
}

/// A resolved TCP address (IPv4 or IPv6).
public struct SocketAddress: Sendable, CustomStringConvertible {
    private var storage: sockaddr_storage
    private let length: socklen_t

    /// Resolves `host` (a name or a literal) and `port`. Name lookups block: call this
    /// off the event loops, before `EventLoop.connect`.
    public static func resolve(host: String, port: Int) throws(SystemError) -> SocketAddress {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            // ENOENT: the name does not exist (EAI_NONAME, EAI_NODATA = -5, EAI_FAIL: retrying cannot
            // help); EAGAIN: try again later.
            let kind = status == EAI_NONAME || status == -5 || status == EAI_FAIL ? ENOENT : status == EAI_AGAIN ? EAGAIN : EINVAL
            throw SystemError(call: "getaddrinfo(\(host)): \(String(cString: gai_strerror(status)))", errno: kind)
        }
        defer { freeaddrinfo(list) }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen))) }
        return SocketAddress(storage: storage, length: first.pointee.ai_addrlen)
    }

    var family: Int32 { Int32(storage.ss_family) }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var storage = storage
        return withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    public var description: String { "\(Sockets.describe(storage)):\(Sockets.port(of: storage))" }

    /// The numeric address, e.g. `10.0.0.5` or `::1`.
    public var numericHost: String { Sockets.describe(storage) }
}

/// Creating, binding and describing TCP sockets (IPv4 and IPv6).
enum Sockets {
    /// A non-blocking listening socket with SO_REUSEADDR and SO_REUSEPORT, so that every
    /// loop can bind its own socket to the same port and the kernel spreads connections;
    /// with TCP_NODELAY and `acceptedSendBuffer`, which Linux passes on to every accepted socket.
    /// A connection is accepted when its first bytes arrive (TCP_DEFER_ACCEPT: every client
    /// here speaks first), so accepting it and reading its request take one wake-up; one that
    /// stays silent is accepted after `deferAcceptSeconds` all the same.
    static func listen(host: String, port: Int, backlog: Int32 = 4096, acceptedSendBuffer: SendBufferSize? = nil) throws(SystemError) -> (fd: Int32, port: Int) {
        let fd = try boundSocket(host: host, port: port, reusePort: true)
        do throws(SystemError) {
            // Accepted sockets inherit these: no setsockopt per connection.
            setNoDelay(fd)
            var deferSeconds = deferAcceptSeconds
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_DEFER_ACCEPT, &deferSeconds, 4)
            if let acceptedSendBuffer { setSendBuffer(fd, acceptedSendBuffer) }
            try syscallChecked("listen") { Glibc.listen(fd, backlog) }
            guard let port = localPort(fd) else { throw SystemError(call: "getsockname", errno: errno) }
            return (fd, port)
        } catch {
            close(fd)
            throw error
        }
    }

    /// How long a connection may stay silent before it is accepted without bytes (the kernel
    /// then accepts it on the client's answer to its next SYN-ACK, about a second later).
    static let deferAcceptSeconds: Int32 = 1

    /// Throws (EADDRINUSE) when something already listens on `host:port`. SO_REUSEPORT
    /// would let our listeners join another server's on the same port, and the two would
    /// split the connections between them; a socket bound without it cannot join.
    static func checkFree(host: String, port: Int) throws(SystemError) {
        close(try boundSocket(host: host, port: port, reusePort: false))
    }

    private static func boundSocket(host: String, port: Int, reusePort: Bool) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else { throw SystemError(call: "getaddrinfo(\(host))", errno: EINVAL) }
        defer { freeaddrinfo(list) }
        let fd = try syscallChecked("socket") {
            socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do throws(SystemError) {
            var one: Int32 = 1
            try syscallChecked("setsockopt(SO_REUSEADDR)") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, 4) }
            if reusePort { try syscallChecked("setsockopt(SO_REUSEPORT)") { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, 4) } }
            try syscallChecked("bind(\(host):\(port))") { bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    static func port(of storage: sockaddr_storage) -> Int {
        var storage = storage
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// The numeric address of a peer (no port), e.g. for logs and per-address limits. An IPv4
    /// address is written here (inet_ntop formats through printf: a cost on every accept).
    static func describe(_ storage: sockaddr_storage) -> String {
        var storage = storage
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: &storage) { raw in
            if family == AF_INET {
                let address = UInt32(bigEndian: raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_addr.s_addr)
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { text in
                    var count = 0
                    for index in 0..<4 {
                        if index > 0 { text[count] = UInt8(ascii: "."); count += 1 }
                        let octet = Int(address >> UInt32(24 - 8 * index) & 0xFF)
                        if octet >= 100 { text[count] = UInt8(48 + octet / 100); count += 1 }
                        if octet >= 10 { text[count] = UInt8(48 + octet / 10 % 10); count += 1 }
                        text[count] = UInt8(48 + octet % 10)
                        count += 1
                    }
                    return String(decoding: UnsafeBufferPointer(rebasing: text[..<count]), as: UTF8.self)
                }
            }
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN) + 1) { text in
                var address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_addr
                guard inet_ntop(AF_INET6, &address, text.baseAddress, socklen_t(text.count)) != nil else { return "" }
                return String(cString: text.baseAddress!)
            }
        }
    }

    /// The local port of a socket (`getsockname`).
    static func localPort(_ fd: Int32) -> Int? { port(fd, getsockname) }

    /// The port of a socket's peer (`getpeername`).
    static func peerPort(_ fd: Int32) -> Int? { port(fd, getpeername) }

    private static func port(_ fd: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) == 0 }
        }
        return ok ? port(of: storage) : nil
    }

    /// Caps a socket's send buffer (SO_SNDBUF) and, with `unsent`, the bytes it holds that
    /// the peer's window has not yet let out (TCP_NOTSENT_LOWAT; 0 is the system's default).
    static func setSendBuffer(_ fd: Int32, _ size: SendBufferSize) {
        var bytes = Int32(clamping: size.bytes)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, 4)
        if var unsent = size.unsent.map(Int32.init(clamping:)) {
            setsockopt(fd, Int32(IPPROTO_TCP), 25 /* TCP_NOTSENT_LOWAT */, &unsent, 4)
        }
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, 4)
    }
}
