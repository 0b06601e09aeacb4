#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call: the call's name and `errno`.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// The outcome of a non-blocking call.
enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

/// Runs a system call: retries on EINTR, maps EAGAIN to `.wouldBlock`, throws other
/// failures with the call's name. EBADF is a bug in the caller and traps.
@inline(__always)
func syscall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        if result >= 0 { return .done(result) }
        let error = errno
        switch error {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        case EBADF: preconditionFailure("\(name) on a closed descriptor")
        default: throw SystemError(call: name, errno: error)
        }
    }
}

/// Like `syscall` for calls that must not block.
@inline(__always)
@discardableResult
func syscallChecked<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
    switch try syscall(name, body) {
    case .done(let value): return value
    case .wouldBlock: throw SystemError(call: name, errno: EAGAIN)
    }
}

/// Nanoseconds from `start` to `now`, or 0 when `start` is later: loops cache the time
/// once per iteration, so a time taken on one loop may be ahead of another loop's `now`.
@inlinable
public func elapsedNanoseconds(from start: UInt64, to now: UInt64) -> UInt64 {
    now > start ? now - start : 0
}

/// Writes all of `bytes` to `fd`: again after a signal (EINTR), and after waiting for room
/// when a non-blocking descriptor is full (EAGAIN). Returns nil, or the errno that stopped it
/// (ENOSPC for a write that took nothing). For files, pipes and terminals; sockets have channels.
@discardableResult
public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
    var offset = 0
    while offset < bytes.count {
        let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if written > 0 {
            offset += written
        } else if written < 0 && errno == EINTR {
            continue
        } else if written < 0 && errno == EAGAIN {
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&ready, 1, 1000)
        } else {
            return written < 0 ? errno : ENOSPC
        }
    }
    return nil
}

/// The bytes of the file at `path`, or nil when there is none. A file of more than `limit`
/// bytes fails with EFBIG (what it holds is not read past that); other failures carry the
/// call (`open`, `read`) and errno (a directory: EISDIR). Reads again after a signal.
public func readWholeFile(_ path: String, atMost limit: Int = .max) throws(SystemError) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
        if errno == ENOENT { return nil }
        throw SystemError(call: "open", errno: errno)
    }
    defer { close(fd) }
    return try readToEnd(fd, atMost: limit)
}

/// Writes all of `bytes` to `fd` (`writeAll(_:_:)`).
@discardableResult
public func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
    bytes.withUnsafeBytes { writeAll(fd, $0) }
}

/// The wall-clock time now, UTC, RFC 3339 with milliseconds (`2026-11-26T09:00:00.123Z`): log
/// lines and a recording's start.
public func utcTimestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var seconds = now.tv_sec
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let millis = Int(now.tv_nsec / 1_000_000)
    let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
}

/// Monotonic time in nanoseconds: the one clock every timer, rate and age here is read from.
public func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
