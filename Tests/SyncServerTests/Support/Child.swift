import CLinux
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn` and reaped with `waitpid`.
///
/// Foundation's `Process.waitUntilExit()` can miss the exit of a short-lived child on
/// Linux and wait forever (seen here with `tmux new-session -d`); every wait here has a
/// deadline instead. Output (stdout and stderr together) is collected by a reader thread,
/// so a chatty child never blocks on a full pipe.
final class Child: @unchecked Sendable {
    enum Output { case capture, discard }

    let pid: pid_t
    private let lock = NSLock()
    private var collected = Data()
    private var exitStatus: Int32?
    private var reader: Thread?
    private var readerDone = false

    /// Starts `executable` (looked up in PATH when it has no slash). Standard error goes
    /// where `errors` says: into the same collected output, or nowhere.
    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
         output: Output = .capture, errors: Output = .capture) throws {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var fds: [Int32] = [-1, -1]
        if output == .capture {
            guard pipe2(&fds, O_CLOEXEC) == 0 else { throw Failure("pipe: \(errno)") }
            posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
            if errors == .capture { posix_spawn_file_actions_adddup2(&actions, fds[1], 2) }
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if output == .discard || errors == .discard { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        // Nothing else of ours (test sockets, other children's pipes) leaks into the child.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)

        // As a service manager or a shell starts a program: no signal blocked, every signal's
        // action the default. Otherwise the child inherits the mask of the test's thread (a
        // worker that blocks almost every signal), and a thread of the child that forgets to
        // block a signal is never caught taking it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
        if output == .capture { close(fds[1]) }
        guard result == 0 else {
            if output == .capture { close(fds[0]) }
            throw Failure("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        if output == .capture { startReader(fds[0]) } else { readerDone = true }
        Self.countSpawn(executable, arguments, environment: env)
    }

    /// With `TESTS_SPAWN_LOG=FILE`, each start of this package's binaries is a line of FILE
    /// (the test that started it, the program, its command): how many tests need a process.
    private static func countSpawn(_ executable: String, _ arguments: [String], environment: [String: String]) {
        guard let log = environment["TESTS_SPAWN_LOG"], executable.hasSuffix("/scrollsync") || executable.hasSuffix("/follow-example") else { return }
        let test = Test.current?.name ?? "?"
        let line = "\(test)\t\(executable.split(separator: "/").last ?? "")\t\(arguments.first ?? "")\n"
        let fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard fd >= 0 else { return }
        _ = line.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    deinit { stop() }

    private func startReader(_ fd: Int32) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = Glibc.poll(&poller, 1, 100)
                if ready == 0 {
                    // A grandchild may hold the pipe open after the child is gone: stop a
                    // second after the child's exit rather than waiting for end of file.
                    if lock.withLock({ readerDone }) { break }
                    continue
                }
                let count = read(fd, &buffer, buffer.count)
                if count <= 0 { if count < 0 && errno == EINTR { continue }; break }
                lock.withLock { collected.append(contentsOf: buffer[0..<count]) }
            }
            close(fd)
            lock.withLock { readerDone = true }
        }
        reader = thread
        thread.start()
    }

    /// Everything the child wrote so far.
    var output: String { lock.withLock { String(decoding: collected, as: UTF8.self) } }

    /// The output split into lines.
    var lines: [String] { output.split(separator: "\n").map(String.init) }

    /// Waits up to `timeout` seconds for the output to satisfy `condition`.
    func waitForOutput(timeout: TimeInterval = 10, _ condition: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(lines) { return true }
            usleep(20_000)
        }
        return condition(lines)
    }

    /// The raw `waitpid` status once the child has exited, reaping it.
    private func reap() -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid || (result < 0 && errno == ECHILD) {
            exitStatus = result == pid ? status : 255 << 8
            return exitStatus
        }
        return nil
    }

    var isRunning: Bool { reap() == nil }

    /// Whether the child exited normally (not by a signal).
    var exitedNormally: Bool { (reap() ?? 0x7f) & 0x7f == 0 }

    /// The exit code, or 128 + signal when a signal ended it; nil while running.
    var status: Int32? {
        guard let raw = reap() else { return nil }
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
    }

    func signal(_ number: Int32) { if isRunning { kill(pid, number) } }

    /// Waits up to `timeout` seconds for the child to exit; returns its status, or nil.
    @discardableResult
    func wait(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status { finishReading(); return status }
            usleep(10_000)
        }
        return nil
    }

    /// Lets the reader take what is left in the pipe, at most a second.
    private func finishReading() {
        let deadline = Date().addingTimeInterval(1)
        while !lock.withLock({ readerDone }) && Date() < deadline { usleep(10_000) }
        lock.withLock { readerDone = true }
    }

    /// SIGTERM, then SIGKILL when it has not exited after `grace` seconds.
    func stop(grace: TimeInterval = 20) {
        guard isRunning else { finishReading(); return }
        kill(pid, SIGCONT)  // a stopped child cannot act on SIGTERM
        kill(pid, SIGTERM)
        if wait(timeout: grace) == nil {
            kill(pid, SIGKILL)
            wait(timeout: 10)
        }
    }
}

/// Runs a command to completion (SIGTERM after `timeout`, SIGKILL 5 s later) and returns
/// its status and output.
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 300) throws -> (status: Int32, output: String) {
    let child = try Child(executable, arguments, environment: environment)
    if child.wait(timeout: timeout) == nil { child.stop(grace: 5) }
    return (child.status ?? -1, child.output)
}
