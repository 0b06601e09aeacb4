import COpenSSL
import ScrollModel
import Synchronization
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// What a room keeps across restarts: its last state, shared document and presenter key
/// (as a digest; the key itself is never stored).
public struct StoredRoom: Sendable, Equatable {
    public var name: String
    public var state: ScrollState?
    public var document: SharedDocument?
    public var keyDigest: String?

    public init(name: String, state: ScrollState?, document: SharedDocument?, keyDigest: String?) {
        self.name = name
        self.state = state
        self.document = document
        self.keyDigest = keyDigest
    }
}

/// Where rooms are kept. `save` and `remove` never block the caller (an event loop).
public protocol RoomStore: Sendable {
    /// Every stored room, read at start-up.
    func loadAll() throws(StoreError) -> [StoredRoom]
    /// Records a room's newest contents; a later save of the same room replaces it.
    func save(_ room: StoredRoom)
    /// Forgets a room.
    func remove(_ name: String)
    /// Waits until everything saved so far is written.
    func flush()
}

public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// Presenter keys are compared and stored as SHA-256 digests salted with the room name.
enum PresenterKey {
    static func digest(_ key: String, room: String) -> String {
        var input = Array("scrollsync.v1 presenter key\u{0}\(room)\u{0}\(key)".utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        _ = input.withUnsafeMutableBytes { SHA256($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count, &digest) }
        return digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// The embedded store: three small files per room in one directory, written by a thread
/// of its own (latest contents per room, at most every `interval`, and never more than a
/// third of that thread's time), each replaced
/// atomically (write, then rename), so a `kill -9` at any moment leaves either the old
/// or the new file. The files hold the wire messages themselves:
/// `NAME.state` a `state`, `NAME.document` a `document`, `NAME.key` the key digest.
public final class FileRoomStore: RoomStore {
    private enum Pending { case save(StoredRoom), remove }
    private struct Queue {
        var pending: [String: Pending] = [:]
        var writing = false
        /// Fingerprint of the document file on disk, per room: documents are rewritten only when they change.
        var writtenDocuments: [String: String] = [:]
        var writtenKeys: [String: String] = [:]
    }

    public let directory: String
    private let interval: UInt32
    private let queue = Mutex(Queue())

    /// Creates `directory` if needed. Writes happen at most every `intervalMilliseconds`.
    public init(directory: String, intervalMilliseconds: UInt32 = 50) throws(StoreError) {
        self.directory = directory
        interval = intervalMilliseconds
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw StoreError(description: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        guard access(directory, W_OK) == 0 else {
            throw StoreError(description: "cannot write to \(directory): \(String(cString: strerror(errno)))")
        }
        let store = UnsafeTransfer(self)
        pthread_detach(spawnThread { store.value.run() })
    }

    public func loadAll() throws(StoreError) -> [StoredRoom] {
        guard let dir = opendir(directory) else { throw StoreError(description: "cannot read \(directory): \(String(cString: strerror(errno)))") }
        defer { closedir(dir) }
        var names = Set<String>()
        while let entry = readdir(dir) {
            let file = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            for suffix in [".state", ".document", ".key"] where file.hasSuffix(suffix) {
                names.insert(String(file.dropLast(suffix.count)))
            }
        }
        var rooms = [StoredRoom]()
        for name in names.sorted() where RoomEndpoint.isValidRoomName(name) {
            var room = StoredRoom(name: name, state: nil, document: nil, keyDigest: nil)
            if let text = read("\(name).state"), case .state(let state)? = try? ServerEvent.decode(text) { room.state = state }
            if let text = read("\(name).document"), case .document(let document)? = try? ServerEvent.decode(text) { room.document = document }
            if let text = read("\(name).key"), text.count == 64 { room.keyDigest = text }
            queue.withLock {
                $0.writtenDocuments[name] = room.document?.fingerprint
                $0.writtenKeys[name] = room.keyDigest
            }
            rooms.append(room)
        }
        return rooms
    }

    public func save(_ room: StoredRoom) {
        queue.withLock { $0.pending[room.name] = .save(room) }
    }

    public func remove(_ name: String) {
        queue.withLock { $0.pending[name] = .remove }
    }

    public func flush() {
        for _ in 0..<2000 {
            if queue.withLock({ $0.pending.isEmpty && !$0.writing }) { return }
            usleep(1000)
        }
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
            for (name, pending) in batch {
                switch pending {
                case .save(let room): write(room)
                case .remove:
                    for suffix in [".state", ".document", ".key"] { unlink("\(directory)/\(name)\(suffix)") }
                    queue.withLock {
                        $0.writtenDocuments[name] = nil
                        $0.writtenKeys[name] = nil
                    }
                }
            }
            queue.withLock { $0.writing = false }
            // With many busy rooms a batch takes a while: rest twice as long as it took, so
            // the store never takes more than a third of a core.
            pause = max(UInt64(interval) * 1_000_000, 2 * (monotonicNanoseconds() - started))
        }
    }

    private func write(_ room: StoredRoom) {
        if let state = room.state { replace("\(room.name).state", ServerMessage.state(state)) }
        let (document, key) = queue.withLock { ($0.writtenDocuments[room.name], $0.writtenKeys[room.name]) }
        if let shared = room.document, shared.fingerprint != document {
            replace("\(room.name).document", ServerMessage.document(shared))
            queue.withLock { $0.writtenDocuments[room.name] = shared.fingerprint }
        }
        if let digest = room.keyDigest, digest != key {
            replace("\(room.name).key", Array(digest.utf8))
            queue.withLock { $0.writtenKeys[room.name] = digest }
        }
    }

    /// Writes `bytes` to a temporary file and renames it over `file`.
    private func replace(_ file: String, _ bytes: [UInt8]) {
        let path = "\(directory)/\(file)"
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        var offset = 0
        let complete = bytes.withUnsafeBytes { buffer -> Bool in
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
        close(fd)
        if complete { rename(temporary, path) } else { unlink(temporary) }
    }

    private func read(_ file: String) -> String? {
        let fd = open("\(directory)/\(file)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
            if bytes.count > 64 << 20 { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

struct UnsafeTransfer<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
