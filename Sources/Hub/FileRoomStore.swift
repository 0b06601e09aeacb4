package import Access
import CLinux
import COpenSSL
import Logging
package import RoomKit
import ScrollModel
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// The embedded store: three small files per room in one directory, written by a thread
/// of its own (latest contents per room, at most every `interval`, and never more than a
/// third of that thread's time). Each file is replaced atomically (write, fsync, rename),
/// so a `kill -9` at any moment leaves the old or the new file, and carries a checksum
/// (`StoreFile`), so a damaged file is noticed rather than read. `NAME.key` holds the key
/// digest, `NAME.state` a `state` and `NAME.document` a `document` message; the key is
/// written first, and a room is only marked written when all its files are.
///
/// A failed write is logged as an error, retried (every second) until it succeeds, and shown
/// in `health`. One server per directory: a lock (`.lock`, `flock`) is held for the store's
/// life, and a second server is refused with a clear message.
public final class FileRoomStore: RoomStore, @unchecked Sendable {
    private enum Pending { case save(StoredRoom), remove }
    private struct Queue {
        var pending: [String: Pending] = [:]
        var writing = false
        /// What is on disk per room: documents and keys are rewritten only when they change.
        var writtenDocuments: [String: String] = [:]
        var writtenKeys: [String: String] = [:]
        var writtenFollowKeys: [String: String] = [:]
        var health = StoreHealth()
    }

    public let directory: String
    private let interval: UInt32
    private let queue = Mutex(Queue())
    private let logger: Logger
    private let lockDescriptor: Int32
    private let writtenHandler = Mutex<WrittenHandler?>(nil)

    /// The `written` handler in a box of its own. Read straight out of a `Mutex` (`withLock { $0 }`),
    /// a closure comes back wrapped in two reabstraction thunks, and that wrapped copy is written
    /// back (swiftlang/swift#91348): every state written grew the handler by two heap objects and
    /// its call by two frames, without end (issue 49). A class reference is read as it is.
    private final class WrittenHandler: Sendable {
        let call: @Sendable (String, Int) -> Void
        init(_ call: @escaping @Sendable (String, Int) -> Void) { self.call = call }
    }

    /// Creates `directory` if needed and locks it. Writes happen at most every `intervalMilliseconds`.
    public init(directory: String, intervalMilliseconds: UInt32 = 50, logger: Logger = Logger(label: "scrollsync")) throws(StoreError) {
        self.directory = directory
        self.logger = logger
        interval = intervalMilliseconds
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw StoreError(description: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        guard access(directory, W_OK) == 0 else {
            throw StoreError(description: "cannot write to \(directory): \(String(cString: strerror(errno)))")
        }
        lockDescriptor = try Self.lock(directory)
        let store = UnsafeTransfer(self)
        pthread_detach(spawnThread { store.value.run() })
    }

    /// Takes `directory/.lock` for this process, or explains who holds it.
    private static func lock(_ directory: String) throws(StoreError) -> Int32 {
        let path = "\(directory)/.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var holder = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &holder, holder.count, 0)
            let pid = count > 0 ? String(decoding: holder[0..<count], as: UTF8.self).filter(\.isNumber) : ""
            Glibc.close(fd)
            throw StoreError(description: "data directory \(directory) is in use by another scrollsync server\(pid.isEmpty ? "" : " (pid \(pid))"); "
                + "give each server its own --data-dir, or stop the other one")
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    deinit { Glibc.close(lockDescriptor) }

    public func close() {
        flush()
        flock(lockDescriptor, LOCK_UN)
    }

    public var written: (@Sendable (String, Int) -> Void)? {
        get { writtenHandler.withLock { $0 }?.call }
        set { writtenHandler.withLock { $0 = newValue.map(WrittenHandler.init) } }
    }

    public var health: StoreHealth {
        queue.withLock { queue in
            var health = queue.health
            health.pendingRooms = queue.pending.count
            return health
        }
    }

    /// Rooms the store remembers something of: waiting to be written, or with a document or
    /// key on disk (tests; at most the rooms held, as every forgotten room is removed).
    var roomsRemembered: Int {
        queue.withLock { Set($0.pending.keys).union($0.writtenDocuments.keys).union($0.writtenKeys.keys).union($0.writtenFollowKeys.keys).count }
    }

    /// A room's files: its state, document, presenter key record and follow key record.
    static let suffixes = [".state", ".document", ".key", ".follow"]

    // MARK: Reading

    public func loadAll(within budget: RestoreBudget) throws(StoreError) -> [StoredRoom] {
        guard let dir = opendir(directory) else { throw StoreError(description: "cannot read \(directory): \(String(cString: strerror(errno)))") }
        var changed = [String: Int]()
        while let entry = readdir(dir) {
            let file = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            for suffix in Self.suffixes where file.hasSuffix(suffix) {
                let name = String(file.dropLast(suffix.count))
                guard RoomCore.isValidName(name) else { continue }
                changed[name] = max(changed[name] ?? 0, modified("\(directory)/\(file)"))
            }
        }
        closedir(dir)
        // Most recently changed first; by name among equals, so a restart is repeatable.
        let order = changed.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
        var rooms = [StoredRoom]()
        var documentBytes = 0
        var forgotten = 0
        for name in order {
            guard rooms.count < budget.rooms else { forget(name); forgotten += 1; continue }
            let room = restore(name, limits: budget.limits)
            let size = room.document?.text.utf8.count ?? 0
            guard budget.documentBytes == 0 || documentBytes + size <= budget.documentBytes else { forget(name); forgotten += 1; continue }
            documentBytes += size
            queue.withLock {
                $0.writtenDocuments[name] = room.document?.fingerprint
                $0.writtenKeys[name] = room.keyDigest
                $0.writtenFollowKeys[name] = room.followKey
            }
            rooms.append(room)
        }
        if forgotten > 0 {
            logger.warning("stored rooms over the restore budget forgotten (least recently changed first)", metadata: [
                "forgotten": "\(forgotten)", "restored": "\(rooms.count)", "budgetRooms": "\(budget.rooms)", "budgetDocumentBytes": "\(budget.documentBytes)",
            ])
        }
        return rooms
    }

    /// A file's modification time in nanoseconds (0 if it cannot be read).
    private func modified(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mtim.tv_sec &* 1_000_000_000 &+ status.st_mtim.tv_nsec : 0
    }

    /// Deletes a room's files now (at start-up, before the writer runs).
    private func forget(_ name: String) {
        for suffix in Self.suffixes { unlink("\(directory)/\(name)\(suffix)") }
    }

    /// One room from its files. A damaged file is logged and counted, never silently
    /// dropped; a room that had a key it can no longer prove is restored locked.
    private func restore(_ name: String, limits: ClientMessage.Limits) -> StoredRoom {
        var room = StoredRoom(name: name, state: nil, document: nil, keyDigest: nil)
        var keyed = false
        var followKeyed = false
        func damaged(_ file: String, _ why: String) {
            queue.withLock { $0.health.damagedFiles += 1 }
            logger.error("stored file damaged", metadata: ["file": "\(directory)/\(file)", "reason": "\(why)"])
        }
        /// A one-line record (`NAME.key`, `NAME.follow`): its text if `isValid`; a damaged or
        /// invalid file is counted and logged, and says the room had one (`lost`).
        func record(_ file: String, _ isValid: (String) -> Bool, invalid: String) -> (text: String?, lost: Bool) {
            switch read(file) {
            case nil: return (nil, false)
            case .failure(let error): damaged(file, error.description); return (nil, true)
            case .success(let contents):
                let text = String(decoding: contents.payload, as: UTF8.self)
                if isValid(text) { return (text, false) }
                damaged(file, invalid)
                return (nil, true)
            }
        }
        (room.keyDigest, keyed) = record("\(name).key", PresenterKey.isValid, invalid: "not a key digest")
        (room.followKey, followKeyed) = record("\(name).follow", FollowKey.isValid, invalid: "not a follow key record")
        switch read("\(name).state") {
        case nil: break
        case .failure(let error): damaged("\(name).state", error.description)
        case .success(let contents):
            keyed = keyed || contents.keyed
            followKeyed = followKeyed || contents.followKeyed
            room.seqCeiling = contents.ceiling
            if contents.payload.isEmpty {
                break  // a ceiling reserved before the room's first state
            } else {
                // Checked as a client's message is: the disk is as untrusted as the network.
                switch Result(catching: { () throws(ProtocolError) in try SharedChange.decode(contents.payload, limits: limits) }) {
                case .success(.state(let state)): room.state = state
                case .success: damaged("\(name).state", "not a state message")
                case .failure(let error): damaged("\(name).state", error.message)
                }
            }
        }
        switch read("\(name).document") {
        case nil: break
        case .failure(let error): damaged("\(name).document", error.description)
        case .success(let contents):
            keyed = keyed || contents.keyed
            followKeyed = followKeyed || contents.followKeyed
            // The fingerprint is computed from the text, the size held to the limit.
            switch Result(catching: { () throws(ProtocolError) in try SharedChange.decode(contents.payload, limits: limits) }) {
            case .success(.document(let document)): room.document = document
            case .success: damaged("\(name).document", "not a document message")
            case .failure(let error): damaged("\(name).document", error.message)
            }
        }
        if followKeyed && room.followKey == nil {
            room.followKey = FollowKey.unreadable
            logger.error("room restored private to presenters only: its follow key could not be read", metadata: [
                "room": "\(name)", "fix": "restore \(directory)/\(name).follow from a backup, or let a presenter set a new follow key",
            ])
        }
        if keyed && room.keyDigest == nil {
            room.locked = true
            logger.error("room restored locked: its presenter key could not be read", metadata: [
                "room": "\(name)", "fix": "restore \(directory)/\(name).key from a backup, or delete the room's files to free the name",
            ])
        }
        return room
    }

    /// A file's checked contents; nil when it does not exist. A file written before files
    /// carried checksums is read if it is exactly what was written then.
    private func read(_ file: String) -> Result<StoreFile.Contents, StoreError>? {
        let bytes: [UInt8]
        do {
            guard let read = try readWholeFile("\(directory)/\(file)", atMost: 64 << 20) else { return nil }
            bytes = read
        } catch {
            return .failure(StoreError(description: error.errno == EFBIG ? "larger than 64 MiB" : "cannot \(error.call): \(String(cString: strerror(error.errno)))"))
        }
        if bytes.starts(with: Array(StoreFile.magic.utf8)) { return StoreFile.decode(bytes) }
        // Before checksums: a key file was exactly 64 hex digits, the others one JSON message.
        if file.hasSuffix(".key") {
            guard PresenterKey.isLegacy(String(decoding: bytes, as: UTF8.self)) else { return .failure(StoreError(description: "not a key digest (\(bytes.count) bytes)")) }
        } else if bytes.withUnsafeBytes({ try? ServerEvent.decode($0) }) == nil {
            return .failure(StoreError(description: "not a message"))
        }
        return .success(StoreFile.Contents(payload: bytes, keyed: false, ceiling: 0))
    }

    // MARK: Writing

    public func save(_ room: StoredRoom) {
        queue.withLock { $0.pending[room.name] = .save(room) }
    }

    public func remove(_ name: String) {
        queue.withLock { $0.pending[name] = .remove }
    }

    @discardableResult
    public func flush() -> Bool {
        for _ in 0..<3000 {
            if queue.withLock({ $0.pending.isEmpty && !$0.writing }) { return true }
            usleep(1000)
        }
        let health = self.health
        logger.error("store: rooms not written at exit", metadata: ["rooms": "\(health.pendingRooms)", "error": "\(health.lastError ?? "-")"])
        return false
    }

    private func run() {
        var pause = UInt64(interval) * 1_000_000
        while true {
            usleep(UInt32(pause / 1000))
            let started = monotonicNanoseconds()
            let batch = queue.withLock { queue -> [String: Pending] in
                defer { queue.pending.removeAll(keepingCapacity: true) }
                queue.writing = !queue.pending.isEmpty
                return queue.pending
            }
            var failure: String?
            for (name, pending) in batch {
                let outcome: String?
                switch pending {
                case .save(let room): outcome = write(room)
                case .remove: outcome = erase(name)
                }
                guard let outcome else { continue }
                failure = outcome
                // Retried in the next round, unless a newer change replaced it meanwhile.
                queue.withLock { queue in
                    queue.health.failedWrites += 1
                    if queue.pending[name] == nil { queue.pending[name] = pending }
                }
            }
            let recovered = queue.withLock { queue -> Bool in
                queue.writing = false
                let wasFailing = queue.health.failing
                queue.health.failing = failure != nil
                if let failure { queue.health.lastError = failure }
                return wasFailing && failure == nil
            }
            if let failure {
                logger.error("store: write failed, retrying every second", metadata: ["directory": "\(directory)", "error": "\(failure)"])
            } else if recovered {
                logger.notice("store: writing again", metadata: ["directory": "\(directory)"])
            }
            // With many busy rooms a batch takes a while: rest twice as long as it took, so
            // the store never takes more than a third of a core; while failing, a second.
            let floor = failure == nil ? UInt64(interval) * 1_000_000 : 1_000_000_000
            pause = max(floor, 2 * (monotonicNanoseconds() - started))
        }
    }

    /// Writes a room's files, the key first; returns why it failed, or nil.
    private func write(_ room: StoredRoom) -> String? {
        let (document, key, followKey) = queue.withLock {
            ($0.writtenDocuments[room.name], $0.writtenKeys[room.name], $0.writtenFollowKeys[room.name])
        }
        let keyed = room.keyDigest != nil || room.locked
        let followKeyed = room.followKey != nil
        if let digest = room.keyDigest, digest != key {
            if let error = replace("\(room.name).key", StoreFile.encode(Array(digest.utf8), keyed: true, followKeyed: followKeyed)) { return error }
            queue.withLock { $0.writtenKeys[room.name] = digest }
        }
        if let record = room.followKey, record != followKey {
            if let error = replace("\(room.name).follow", StoreFile.encode(Array(record.utf8), keyed: keyed, followKeyed: true)) { return error }
            queue.withLock { $0.writtenFollowKeys[room.name] = record }
        }
        if let shared = room.document, shared.fingerprint != document {
            if let error = replace("\(room.name).document", StoreFile.encode(ServerMessage.document(shared), keyed: keyed, followKeyed: followKeyed)) { return error }
            queue.withLock { $0.writtenDocuments[room.name] = shared.fingerprint }
        }
        if room.state != nil || room.seqCeiling > 0 {
            // Before the room's first state the file holds only the ceiling (no payload).
            let payload = room.state.map { ServerMessage.state($0) } ?? []
            if let error = replace("\(room.name).state", StoreFile.encode(payload, keyed: keyed, followKeyed: followKeyed, ceiling: room.seqCeiling)) {
                return error
            }
            writtenHandler.withLock { $0 }?.call(room.name, room.seqCeiling)
        }
        return nil
    }

    private func erase(_ name: String) -> String? {
        for suffix in Self.suffixes where unlink("\(directory)/\(name)\(suffix)") != 0 && errno != ENOENT {
            return "cannot remove \(name)\(suffix): \(String(cString: strerror(errno)))"
        }
        queue.withLock {
            $0.writtenDocuments[name] = nil
            $0.writtenKeys[name] = nil
            $0.writtenFollowKeys[name] = nil
        }
        return nil
    }

    /// Writes `bytes` to a temporary file, flushes it to the disk, and renames it over
    /// `file`; returns why it failed, or nil.
    private func replace(_ file: String, _ bytes: [UInt8]) -> String? {
        let path = "\(directory)/\(file)"
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot create \(file).tmp: \(String(cString: strerror(errno)))" }
        var error = writeAll(fd, bytes) ?? 0
        if error == 0 && fsync(fd) != 0 { error = errno }
        Glibc.close(fd)
        if error == 0 && rename(temporary, path) != 0 { error = errno }
        guard error == 0 else {
            unlink(temporary)
            return "cannot write \(file): \(String(cString: strerror(error)))"
        }
        return nil
    }
}
