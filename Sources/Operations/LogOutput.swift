package import Access
import DequeModule
import Logging
import ScrollModel
import Synchronization
import TextSafety
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Log lines leave the process on a thread of their own: an event loop that logs only
/// queues the line, so a slow or blocked standard output never stalls it. When more than
/// `capacity` lines wait, new ones are dropped and counted. The thread blocks HUP, INT and
/// TERM, so they reach the thread that waits for them.
public final class LogOutput: Sendable {
    private struct Queue {
        var lines = Deque<[UInt8]>()
        var dropped = 0
        var writing = false
    }

    private let fd: Int32
    private let capacity: Int
    private let levelStorage = Atomic<UInt8>(UInt8(Logger.Level.allCases.firstIndex(of: .info)!))

    /// The least severe event written, for every handler on this output (a reload changes it).
    public var level: Logger.Level {
        get { Logger.Level.allCases[Int(levelStorage.load(ordering: .relaxed))] }
        set { levelStorage.store(UInt8(Logger.Level.allCases.firstIndex(of: newValue)!), ordering: .relaxed) }
    }
    private let queue = Mutex(Queue())
    private let wakeup = Semaphore()

    /// Lines dropped because the queue was full.
    public var dropped: Int { queue.withLock { $0.dropped } }

    public init(fd: Int32 = STDOUT_FILENO, capacity: Int = 10_000) {
        self.fd = fd
        self.capacity = capacity
        let output = UnsafeTransfer(self)
        pthread_detach(spawnThread { output.value.run() })
    }

    /// Queues one line (a newline is added).
    public func write(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(10)
        let queued = queue.withLock { queue in
            guard queue.lines.count < capacity else { queue.dropped += 1; return false }
            queue.lines.append(bytes)
            return true
        }
        if queued { wakeup.signal() }
    }

    /// Waits until every queued line is written (at most `timeout` seconds).
    public func flush(timeout: Double = 2) {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if queue.withLock({ $0.lines.isEmpty && !$0.writing }) { return }
            usleep(1000)
        }
    }

    private func run() {
        // Not a thread for signals, whatever the creator's mask: HUP, INT and TERM are the
        // process's to take (serve's sigwait), and their default action here would end it.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGHUP, SIGINT, SIGTERM] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        while true {
            wakeup.wait()
            while let line = queue.withLock({ queue -> [UInt8]? in
                let line = queue.lines.popFirst()
                queue.writing = line != nil
                return line
            }) {
                writeAll(fd, line)
            }
            queue.withLock { $0.writing = false }
        }
    }

}

private func monotonicSeconds() -> Double { Double(monotonicNanoseconds()) / 1e9 }

/// swift-log handler: `2026-11-22T18:30:00.123Z info listening url=ws://127.0.0.1:8080`,
/// or the same as one JSON object per line.
public struct LineLogHandler: LogHandler {
    /// Its output's level, shared by every handler on it.
    public var logLevel: Logger.Level {
        get { output.level }
        set { output.level = newValue }
    }
    public var metadata: Logger.Metadata = [:]
    private let output: LogOutput
    private let json: Bool

    public init(output: LogOutput, level: Logger.Level, json: Bool) {
        self.output = output
        self.json = json
        output.level = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let time = utcTimestamp()
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("time", time)
            writer.field("level", event.level.rawValue)
            writer.field("message", event.message.description)
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) { writer.key(text: key); writer.string(value.description) }
            writer.endObject()
            output.write(String(decoding: writer.bytes, as: UTF8.self))
        } else {
            var line = "\(time) \(event.level.rawValue) \(SafeText.display(event.message.description))"
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                line += " \(key)=" + Self.quoted(value.description)
            }
            output.write(line)
        }
    }

    /// A value as one token of a text line: controls shown as pictures (no forged line, no
    /// escape sequence reaches whoever reads the log), and in quotes, with `"` and `\`
    /// escaped, when it is empty or holds a space, a quote or `=`.
    static func quoted(_ value: String) -> String {
        let text = SafeText.display(value)
        guard text.isEmpty || text.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" }) else { return text }
        var out = "\""
        for character in text {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }
}

extension ServerConfiguration.LogOptions.Level {
    /// The swift-log level of the same name.
    public var loggerLevel: Logger.Level {
        switch self {
        case .trace: .trace
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical: .critical
        }
    }
}
