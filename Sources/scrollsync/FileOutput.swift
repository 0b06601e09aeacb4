import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Writes `bytes` to `path` whole or not at all: into a file beside it, synced, then renamed
/// over it; a failure stops the command saying why (an existing file is left as it was).
func writeFileAtomically(_ path: String, _ bytes: [UInt8]) throws {
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
