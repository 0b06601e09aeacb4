#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a file that must be a regular file was not read.
public enum RegularFileError: Error, CustomStringConvertible, Sendable, Equatable {
    /// `open`, `fstat` or `read` failed (errno).
    case system(SystemError)
    /// The path names something else; `kind` says what ("a FIFO", "a directory", …).
    case notRegular(kind: String)
    /// It holds more than the reader's limit (bytes).
    case tooLarge(limit: Int)

    public var description: String {
        switch self {
        case .system(let error): String(cString: strerror(error.errno))
        case .notRegular(let kind): "it is \(kind), not a regular file"
        case .tooLarge(let limit): "it holds more than \(limit) bytes"
        }
    }
}

extension SystemError: Equatable {
    public static func == (a: SystemError, b: SystemError) -> Bool { a.call == b.call && a.errno == b.errno }
}

/// The bytes of the regular file at `path`, at most `limit` of them. A FIFO, a directory, a
/// device or a socket is refused before a byte is read: the name is checked with `stat` (so
/// a device is never opened), and the file opened is checked again with `fstat` (the name
/// may have changed in between). The open never blocks (`O_NONBLOCK`: a FIFO with no writer
/// would wait forever, and a reload with it). For files an operator names (certificates,
/// keys, the configuration), read at start and on every reload.
public func readRegularFile(_ path: String, atMost limit: Int) throws(RegularFileError) -> [UInt8] {
    var status = stat()
    guard stat(path, &status) == 0 else { throw .system(SystemError(call: "stat", errno: errno)) }
    try requireRegular(status, limit: limit)
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
    guard fd >= 0 else { throw .system(SystemError(call: "open", errno: errno)) }
    defer { close(fd) }
    guard fstat(fd, &status) == 0 else { throw .system(SystemError(call: "fstat", errno: errno)) }
    try requireRegular(status, limit: limit)
    do {
        return try readToEnd(fd, atMost: limit)
    } catch {
        throw error.errno == EFBIG ? .tooLarge(limit: limit) : .system(error)
    }
}

private func requireRegular(_ status: stat, limit: Int) throws(RegularFileError) {
    let type = status.st_mode & S_IFMT
    guard type == S_IFREG else { throw .notRegular(kind: fileKind(type)) }
    guard status.st_size <= limit else { throw .tooLarge(limit: limit) }
}

/// What a file type (`st_mode & S_IFMT`) is, with its article.
private func fileKind(_ type: mode_t) -> String {
    switch type {
    case S_IFIFO: "a FIFO"
    case S_IFDIR: "a directory"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    case S_IFLNK: "a symbolic link"
    default: "an unknown kind of file"
    }
}

/// Reads `fd` to its end; more than `limit` bytes fails with EFBIG. Reads again after a signal.
func readToEnd(_ fd: Int32, atMost limit: Int) throws(SystemError) -> [UInt8] {
    var bytes = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        if count < 0 { throw SystemError(call: "read", errno: errno) }
        guard count > 0 else { return bytes }
        bytes += chunk[0..<count]
        if bytes.count > limit { throw SystemError(call: "read", errno: EFBIG) }
    }
}
