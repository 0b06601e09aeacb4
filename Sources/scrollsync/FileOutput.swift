import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Writes `bytes` to `path` whole or not at all: into a file beside it, synced, then renamed
/// over it; a failure stops the command saying why (an existing file is left as it was). An
/// existing `path` must be a regular file: a directory, FIFO, device or symbolic link is
/// refused, not replaced.
func writeFileAtomically(_ path: String, _ bytes: [UInt8]) throws {
    var status = stat()
    if lstat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
        let kind = switch status.st_mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a FIFO"
        case S_IFCHR, S_IFBLK: "a device"
        default: "not a regular file"
        }
        fail("refusing to write \(SafeText.display(path)): it is \(kind), not a regular file")
    }
    let partial = path + ".partial"
    let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { fail("cannot write \(SafeText.display(path)): \(String(cString: strerror(errno)))") }
    var failure = writeAll(fd, bytes)
    if failure == nil, fsync(fd) != 0, errno != EINVAL { failure = errno }
    close(fd)
    if failure == nil, rename(partial, path) != 0 { failure = errno }
    if let failure {
        unlink(partial)
        fail("cannot write \(SafeText.display(path)): \(String(cString: strerror(failure)))")
    }
}
