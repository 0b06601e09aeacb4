import Dispatch
import TerminalUI
import TextSafety
import Transport

/// `present`'s live reload: after each save of the presented file, reads it again and hands
/// the new text to the viewer (which shares it and keeps its place); a save that cannot be
/// read is said on the status line and the last version stays.
final class DocumentWatcher: @unchecked Sendable {
    private let loop: EventLoop
    /// Loop thread only.
    private var changes: FileChanges?

    init(path: String, loop: EventLoop, app: TerminalApp) {
        self.loop = loop
        loop.execute { [self] in
            do {
                changes = try FileChanges(path: path, loop: loop) {
                    do {
                        let document = try readDocument(path)
                        app.post(.documentEdited(name: document.name, format: document.format, text: document.text))
                    } catch {
                        app.post(.documentUnreadable("\(reloadNoticePrefix) \(SafeText.display("\(error)")); showing the last version"))
                    }
                }
            } catch {
                app.post(.documentUnreadable("\(reloadNoticePrefix) not watching \(SafeText.display(path)) for changes (\(error))"))
            }
        }
    }

    /// Stops watching (before the loop shuts down).
    func stop() {
        let done = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            changes?.cancel()
            changes = nil
            done.signal()
        }
        done.wait()
    }
}
