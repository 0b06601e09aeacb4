package import Access
import Logging
import ScrollModel
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// Where the embedded store keeps rooms' recordings: `DIRECTORY/recordings/NAME.rec`, each a
/// recording file as Protocol/RECORDING.md describes (`scrollsync play` reads it as it is).
/// Lines are appended by a thread of its own, never by an event loop; a failed write is
/// logged, shown in /healthz and retried. At start-up each file is checked as any recording
/// from outside is: a damaged tail (a crash mid-line) is cut at the last good line, and a
/// file whose header is bad is set aside as `NAME.rec.damaged`.
package final class RecordingFiles: @unchecked Sendable {
    private enum Pending { case append([UInt8]), remove }
    private struct State {
        var pending: [String: [Pending]] = [:]
        var failing: String?
        var damaged = 0
        var writing = false
        var closed = false
    }

    let directory: String
    private let state = Mutex(State())
    private let logger: Logger

    init(directory: String, logger: Logger) throws(StoreError) {
        self.directory = directory
        self.logger = logger
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw StoreError(description: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let files = UnsafeTransfer(self)
        pthread_detach(spawnThread { files.value.run() })
    }

    /// Why writing fails now, or nil.
    package var failing: String? { state.withLock { $0.failing } }
    /// Files found damaged at start-up.
    package var damagedFiles: Int { state.withLock { $0.damaged } }

    func append(_ bytes: ArraySlice<UInt8>, room: String) {
        state.withLock { $0.pending[room, default: []].append(.append(Array(bytes))) }
    }

    /// What waits for `room` goes with it: while writes fail (disk full), a room recorded,
    /// dropped and recorded again keeps one recording's lines queued, not every one's (issue 49).
    func remove(_ room: String) {
        state.withLock { $0.pending[room] = [.remove] }
    }

    /// Bytes of lines waiting to be written (tests).
    var pendingBytes: Int {
        state.withLock { $0.pending.values.joined().reduce(0) { if case .append(let bytes) = $1 { $0 + bytes.count } else { $0 } } }
    }

    /// Writes what is pending (a few seconds at most) and stops the writer; false when
    /// something could not be written.
    @discardableResult
    package func close() -> Bool {
        state.withLock { $0.closed = true }
        for _ in 0..<3000 {
            if state.withLock({ $0.pending.isEmpty && !$0.writing }) { return true }
            usleep(1000)
        }
        logger.error("recordings: not all written at exit", metadata: ["error": "\(failing ?? "-")"])
        return false
    }

    /// Room `name`'s recording as far as it reads (nil: none, unreadable from its header, or
    /// larger than a room's recording may be: `atMost` bytes).
    func load(_ name: String, limits: ClientMessage.Limits, atMost limit: Int) -> (bytes: [UInt8], lastSeconds: Double)? {
        let path = "\(directory)/\(name).rec"
        let bytes: [UInt8]
        do {
            guard let read = try readWholeFile(path, atMost: limit) else { return nil }
            bytes = read
        } catch {
            state.withLock { $0.damaged += 1 }
            let reason = error.errno == EFBIG ? "larger than limits.recordingBytes (\(limit))" : "\(error)"
            logger.error("stored recording not read", metadata: ["file": "\(path)", "reason": "\(reason)"])
            if error.errno == EFBIG { rename(path, path + ".damaged") }
            return nil
        }
        do {
            let recording = try Recording.read(bytes, limits: limits)
            return (bytes, recording.events.last?.seconds ?? 0)
        } catch {
            state.withLock { $0.damaged += 1 }
            logger.error("stored recording damaged", metadata: ["file": "\(path)", "reason": "\(error.description)"])
            // Keep the lines before the first bad one, if the header is among them.
            let good = bytes.split(separator: 10, maxSplits: error.line - 1, omittingEmptySubsequences: false).dropLast()
            let prefix = Array(good.joined(separator: [10])) + [10]
            if error.line > 1, let recording = try? Recording.read(prefix, limits: limits) {
                truncate(path, prefix.count)
                return (prefix, recording.events.last?.seconds ?? 0)
            }
            rename(path, path + ".damaged")
            return nil
        }
    }

    /// Deletes the recordings of rooms that were not restored (forgotten while the server was
    /// down, or past the restore budget): a recording lives as long as its room.
    func removeAll(except rooms: Set<String>) {
        guard let dir = opendir(directory) else { return }
        var names = [String]()
        while let entry = readdir(dir) {
            let file = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard file.hasSuffix(".rec") else { continue }
            names.append(String(file.dropLast(4)))
        }
        closedir(dir)
        for name in names where !rooms.contains(name) { unlink("\(directory)/\(name).rec") }
    }

    private func run() {
        while true {
            let closed = state.withLock { $0.closed }
            usleep(closed ? 1000 : 200_000)
            let batch = state.withLock { state -> [String: [Pending]]? in
                if state.closed && state.pending.isEmpty { return nil }
                defer { state.pending.removeAll(keepingCapacity: true) }
                state.writing = !state.pending.isEmpty
                return state.pending
            }
            guard let batch else { return }
            var failure: String?
            for (name, steps) in batch {
                for (index, step) in steps.enumerated() {
                    if let error = carryOut(step, room: name) {
                        failure = error
                        // Retried in order before anything newer.
                        state.withLock { state in
                            let newer = state.pending[name] ?? []
                            guard !newer.contains(where: { if case .remove = $0 { true } else { false } }) else { return }  // it went meanwhile
                            state.pending[name] = Array(steps[index...]) + newer
                        }
                        break
                    }
                }
            }
            let wasFailing = state.withLock { state -> String? in
                defer {
                    state.failing = failure
                    state.writing = false
                }
                return state.failing
            }
            if let failure, wasFailing == nil {
                logger.error("recordings: write failed, retrying", metadata: ["directory": "\(directory)", "error": "\(failure)"])
            } else if failure == nil, wasFailing != nil {
                logger.notice("recordings: writing again", metadata: ["directory": "\(directory)"])
            }
            if failure != nil { sleep(1) }
        }
    }

    private func carryOut(_ step: Pending, room: String) -> String? {
        let path = "\(directory)/\(room).rec"
        switch step {
        case .remove:
            return unlink(path) == 0 || errno == ENOENT ? nil : "cannot remove \(room).rec: \(String(cString: strerror(errno)))"
        case .append(let bytes):
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return "cannot open \(room).rec: \(String(cString: strerror(errno)))" }
            let before = lseek(fd, 0, SEEK_END)
            let error = writeAll(fd, bytes)
            if let error {
                // Never half a line: what was written of this part is taken back before a retry.
                ftruncate(fd, before)
                Glibc.close(fd)
                return "cannot write \(room).rec: \(String(cString: strerror(error)))"
            }
            Glibc.close(fd)
            return nil
        }
    }
}
