/// A room's timeline as a file (Protocol/RECORDING.md): JSON lines, a header, then one line
/// per message the room sent, `[seconds since the start, message]`, the message being the
/// protocol's own server message (`state`, `document`, `driver`, `presence`). Never holds a
/// key, a follow key or a token. Read like any input from outside: every line is checked by
/// the rules a node applies to what it reads from another (`SharedChange`), and a problem is
/// named with its line.
public struct Recording: Sendable, Equatable {
    public static let version = 1
    /// The longest recording: a week (a later time is a mistake, not a talk).
    public static let maxSeconds = 7.0 * 24 * 3600
    /// The most events one recording holds (at 60 states a second: more than four hours).
    public static let maxEvents = 1_000_000
    /// The longest room URL a header holds.
    public static let maxURLBytes = 2048

    /// The longest line a reader takes, checked before the line is decoded (a line of 100 MB
    /// cost some 460 MB to refuse after decoding): the document limit and the event's own bytes
    /// (a name, the header's URL, room and start, and some punctuation), each escaped at its
    /// worst, six bytes (`\u001f`) for a byte. 6 MiB and 16 KiB by default.
    public static func maxLineBytes(_ limits: ClientMessage.Limits) -> Int {
        6 * (limits.maxDocumentBytes + limits.maxNameBytes + maxURLBytes + 256 + 64) + 1024
    }

    public struct Header: Sendable, Equatable {
        public var room: String
        /// When the recording started, ISO 8601 in UTC (`2026-11-26T09:00:00.123Z`).
        public var started: String
        /// The room's URL without keys, follow keys or tokens.
        public var url: String
        /// The room's document when the recording started, if it had one (later ones are events).
        public var document: SharedDocument?

        public init(room: String, started: String, url: String, document: SharedDocument? = nil) {
            self.room = room
            self.started = started
            self.url = url
            self.document = document
        }
    }

    public enum Message: Sendable, Equatable {
        case state(ScrollState)
        case driver(SessionID?, name: String?)
        case document(SharedDocument)
        case presence(Presence)
    }

    public struct Event: Sendable, Equatable {
        public var seconds: Double
        public var message: Message

        public init(seconds: Double, message: Message) {
            self.seconds = seconds
            self.message = message
        }
    }

    public var header: Header
    public var events: [Event]

    public init(header: Header, events: [Event] = []) {
        self.header = header
        self.events = events
    }

    /// What is wrong with a recording, and on which line (1-based).
    public struct Problem: Error, Equatable, CustomStringConvertible, Sendable {
        public let line: Int
        public let reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    // MARK: Writing

    /// The header line (no newline).
    public static func headerLine(_ header: Header) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.field("format", "scrollsync-recording")
        w.field("version", version)
        w.field("room", header.room)
        w.field("started", header.started)
        w.field("url", header.url)
        if let document = header.document {
            w.key("document")
            w.raw(String(decoding: ServerMessage.document(document), as: UTF8.self))
        }
        w.endObject()
        return w.bytes
    }

    /// One event's line (no newline): `[seconds, message]`, seconds to the millisecond.
    public static func eventLine(_ event: Event) -> [UInt8] {
        let message: [UInt8] = switch event.message {
        case .state(let state): ServerMessage.state(state)
        case .driver(let id, let name): ServerMessage.driver(id?.description, name: name)
        case .document(let document): ServerMessage.document(document)
        case .presence(let presence): ServerMessage.presence(presence)
        }
        return Array("[\((event.seconds * 1000).rounded() / 1000),".utf8) + message + [UInt8(ascii: "]")]
    }

    // MARK: Reading

    /// Reads a recording, checking every line; `limits` bound documents and names as a
    /// server's do.
    public static func read(_ bytes: [UInt8], limits: ClientMessage.Limits = .init()) throws(Problem) -> Recording {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { throw Problem(line: 1, reason: "empty: a recording starts with its header") }
        try checkLine(first, line: 1, limits: limits)
        var recording = Recording(header: try header(first, limits: limits))
        guard lines.count - 1 <= maxEvents else { throw Problem(line: maxEvents + 2, reason: "more than \(maxEvents) events") }
        var last = 0.0
        for (index, line) in lines.enumerated().dropFirst() {
            try checkLine(line, line: index + 1, limits: limits)
            let event = try self.event(line, line: index + 1, limits: limits)
            guard event.seconds >= last else {
                throw Problem(line: index + 1, reason: "its time \(event.seconds) s is before the line above's (\(last) s): events are in order")
            }
            last = event.seconds
            recording.events.append(event)
        }
        return recording
    }

    /// A line is refused before it is decoded when it is longer than any event can be, or is
    /// not UTF-8 (a name or a text must not be repaired into something else).
    private static func checkLine(_ bytes: ArraySlice<UInt8>, line: Int, limits: ClientMessage.Limits) throws(Problem) {
        let limit = maxLineBytes(limits)
        guard bytes.count <= limit else { throw Problem(line: line, reason: "\(bytes.count) bytes: longer than any event (\(limit) bytes)") }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return
            case .error: throw Problem(line: line, reason: "not UTF-8")
            }
        }
    }

    private static func parse(_ bytes: ArraySlice<UInt8>, line: Int) throws(Problem) -> JSON {
        do {
            return try bytes.withUnsafeBytes { (buffer) throws(JSONError) in try JSON.parse(buffer) }
        } catch {
            throw Problem(line: line, reason: "not JSON (\(error))")
        }
    }

    private static func header(_ bytes: ArraySlice<UInt8>, limits: ClientMessage.Limits) throws(Problem) -> Header {
        let json = try parse(bytes, line: 1)
        guard json["format"]?.string == "scrollsync-recording" else {
            throw Problem(line: 1, reason: "not a ScrollSync recording (the header needs \"format\": \"scrollsync-recording\")")
        }
        guard case .number(let version, _)? = json["version"], version == Double(Self.version) else {
            throw Problem(line: 1, reason: "version \(json["version"].map { "\($0)" } ?? "missing"): this reader knows version \(Self.version)")
        }
        guard let room = json["room"]?.string, (1...64).contains(room.count), room.utf8.count <= 256 else {
            throw Problem(line: 1, reason: "\"room\" must be a room name")
        }
        guard let started = json["started"]?.string, (1...64).contains(started.utf8.count) else {
            throw Problem(line: 1, reason: "\"started\" must be a time (ISO 8601)")
        }
        guard let url = json["url"]?.string, url.utf8.count <= maxURLBytes else {
            throw Problem(line: 1, reason: "\"url\" must be a string of at most \(maxURLBytes) bytes")
        }
        if let problem = QueryText.secretProblem(inURL: url) { throw Problem(line: 1, reason: "\"url\" \(problem): a recording never holds one") }
        var document: SharedDocument?
        if let value = json["document"], !value.isNull {
            do {
                document = try SharedChange.document(value, limits: limits)
            } catch {
                throw Problem(line: 1, reason: "\"document\": \(error.message)")
            }
        }
        return Header(room: room, started: started, url: url, document: document)
    }

    private static func event(_ bytes: ArraySlice<UInt8>, line: Int, limits: ClientMessage.Limits) throws(Problem) -> Event {
        guard case .array(let parts) = try parse(bytes, line: line), parts.count == 2 else {
            throw Problem(line: line, reason: "an event is [seconds, message]")
        }
        guard case .number(let seconds, _) = parts[0], seconds.isFinite, (0...maxSeconds).contains(seconds) else {
            throw Problem(line: line, reason: "its time must be seconds from 0 to \(Int(maxSeconds)) since the start")
        }
        let json = parts[1]
        do throws(ProtocolError) {
            switch json["type"]?.string {
            case "state": return Event(seconds: seconds, message: .state(try SharedChange.state(json, limits: limits)))
            case "driver":
                guard case .driver(let id, let name) = try SharedChange.driver(json) else { break }
                return Event(seconds: seconds, message: .driver(id, name: name))
            case "document": return Event(seconds: seconds, message: .document(try SharedChange.document(json, limits: limits)))
            case "presence":
                let counts = ["presenters", "followers", "detached"].map { json[$0]?.double }
                guard counts.allSatisfy({ $0.map { $0 >= 0 && $0 <= 1e9 && $0 == $0.rounded() } ?? false }) else {
                    throw ProtocolError(.badMessage, "presence counts must be integers from 0 to 10^9")
                }
                return Event(seconds: seconds, message: .presence(Presence(presenters: Int(counts[0]!), followers: Int(counts[1]!), detached: Int(counts[2]!))))
            default:
                break
            }
        } catch {
            throw Problem(line: line, reason: error.message)
        }
        throw Problem(line: line, reason: "a recording holds state, driver, document and presence messages, not \(json["type"]?.string.map { "\"\($0.prefix(32))\"" } ?? "this")")
    }
}
