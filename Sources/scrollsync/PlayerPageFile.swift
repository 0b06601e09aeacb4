import ScrollModel
import SyncServer
import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// `scrollsync play FILE --html PAGE`: the recording as one self-contained page (the viewer's
/// script and style and the recording inline, nothing fetched) for any static host or
/// `file://`, written whole or not at all (`writeFileAtomically`).
func writePlayerPage(_ recording: Recording, times: [Double], to path: String) throws {
    let page = Array(PlayerPage.html(recording, selfContained: true, times: times).utf8)
    try writeFileAtomically(path, page)
    log("wrote \(SafeText.display(path)) (\(page.count / 1024 + 1) KiB): open it in any browser, or put it on any static host", to: STDERR_FILENO)
}
