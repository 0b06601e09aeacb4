import ScrollModel
import SyncServer
import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// `scrollsync play FILE --html PAGE`: the recording as one self-contained page (the viewer's
/// script and style and the recording inline, nothing fetched) for any static host or
/// `file://`. Written beside `path` and renamed over it, so a reader never sees half a page;
/// an existing `path` must be a regular file (a directory, FIFO, device or symbolic link is
/// refused, not replaced).
func writePlayerPage(_ recording: Recording, times: [Double], to path: String) {
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
    let page = Array(PlayerPage.html(recording, selfContained: true, times: times).utf8)
    var template = Array((path + ".partial-XXXXXX").utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { fail("cannot write \(SafeText.display(path)): \(String(cString: strerror(errno)))") }
    let partial = String(cString: template)
    fchmod(fd, 0o644)
    let failure = writeAll(fd, page) ?? (fsync(fd) == 0 || errno == EINVAL ? nil : errno)
    close(fd)
    guard failure == nil, rename(partial, path) == 0 else {
        let reason = String(cString: strerror(failure ?? errno))
        unlink(partial)
        fail("cannot write \(SafeText.display(path)): \(reason)")
    }
    log("wrote \(SafeText.display(path)) (\(page.count / 1024 + 1) KiB): open it in any browser, or put it on any static host", to: STDERR_FILENO)
}
