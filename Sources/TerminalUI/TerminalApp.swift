import ScrollModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs a viewer in the terminal: reads keys, takes messages from other threads,
/// applies `update`, and draws `view` through the diff renderer at most 60 times a second.
public final class TerminalApp: @unchecked Sendable {
    /// The model; read it after `run()` returns for how the session ended.
    public private(set) var model: ViewerModel
    private let send: @Sendable (ClientMessage) -> Void
    /// Keys another part of the program takes before the viewer (a player's controls).
    private let takeKey: ((Key) -> Bool)?
    private let inbox = Mutex<[ViewerMessage]>([])
    private let wake: (read: Int32, write: Int32)
    private var renderer = Renderer()
    private var quit = false
    /// Another thread asked `run` to return once what it posted is on the screen.
    private let stopping = Atomic<Bool>(false)

    /// - Parameter send: delivers a message to the room (called on the UI thread).
    /// - Parameter takeKey: sees each key first; a key it returns true for goes no further.
    public init(model: ViewerModel, takeKey: ((Key) -> Bool)? = nil, send: @escaping @Sendable (ClientMessage) -> Void) {
        self.model = model
        self.takeKey = takeKey
        self.send = send
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        wake = (fds[0], fds[1])
    }

    /// Hands a message to the UI thread. Safe from any thread.
    public func post(_ message: ViewerMessage) {
        inbox.withLock { $0.append(message) }
        var byte: UInt8 = 0
        _ = write(wake.write, &byte, 1)
    }

    /// Makes `run` return once the messages posted before are drawn (a recording that
    /// played to its end). Safe from any thread.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        var byte: UInt8 = 0
        _ = write(wake.write, &byte, 1)
    }

    /// Takes over the terminal until the user quits or `stop()`; restores it on the way out.
    public func run() {
        Terminal.resizePipe = wake.write
        Terminal.start()
        defer { Terminal.restore() }
        let size = Terminal.size
        dispatch(.resize(width: size.width, height: size.height))
        var lastRender: Int64 = 0
        var dirty = true
        var input = [UInt8](repeating: 0, count: 1024)
        while !quit {
            let now = wallClockMs()
            dispatch(.clock(now))
            let messages = inbox.withLock { inbox -> [ViewerMessage] in
                defer { inbox.removeAll() }
                return inbox
            }
            for message in messages { dispatch(message) }
            dirty = dirty || !messages.isEmpty
            // Time moves the status line (the retry countdown, "moved N s ago"): redraw it at
            // least every 250 ms; the renderer writes only the lines that changed.
            if (dirty || now - lastRender >= 250) && now - lastRender >= minimumUpdateIntervalMs {
                Terminal.write(renderer.diff(to: view(model)))
                lastRender = now
                dirty = false
            }
            if !dirty, stopping.load(ordering: .acquiring), inbox.withLock({ $0.isEmpty }) { break }
            var fds = [pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, dirty || model.pendingUpdate ? Int32(minimumUpdateIntervalMs) : 250)
            if fds[0].revents & Int16(POLLIN) != 0 {
                let count = read(STDIN_FILENO, &input, input.count)
                if count > 0 {
                    // While the help is shown, the next key is the viewer's (it hides the help); so
                    // is every key typed into the search prompt.
                    for key in KeyDecoder.decode(Array(input[0..<count])) where model.showingHelp || model.search.isTyping || takeKey?(key) != true {
                        dispatch(.key(key))
                    }
                    dirty = true
                } else if count == 0 {
                    quit = true  // standard input closed
                }
            }
            if fds[1].revents & Int16(POLLIN) != 0 {
                while read(wake.read, &input, input.count) > 0 {}
                let size = Terminal.size
                if size.width != model.width || size.height != model.height {
                    dispatch(.resize(width: size.width, height: size.height))
                    renderer.invalidate()
                    Terminal.write("\u{1B}[2J")
                    dirty = true
                }
            }
        }
    }

    private func dispatch(_ message: ViewerMessage) {
        for command in update(&model, message) {
            switch command {
            case .send(let outgoing): send(outgoing)
            case .quit: quit = true
            }
        }
    }

}

/// Wall-clock time in milliseconds since 1970 (the `t` a presenter attaches).
public func wallClockMs() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}
