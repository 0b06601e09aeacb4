/// A change that another node published for a room (through Redis), decoded by the same
/// rules as a client's message (README, *Several nodes*): whatever a node reads from Redis
/// is as untrusted as what a client sends. A state's fields go through the `scroll`
/// validator and its derived fields (progress, atTop, atBottom) are computed here, not
/// taken; a document's fingerprint is computed from its text; ids must be session ids.
/// The hub sends members its own encoding of the decoded value, never the bytes it read.
public enum SharedChange: Sendable, Equatable {
    case state(ScrollState)
    case driver(SessionID?, name: String?)
    case document(SharedDocument)
    /// The room's follow key record (nil: public again). Between nodes only, never to clients.
    case access(followKey: String?)
    /// The room's presenter key record, put back by a merge (docs/cluster.md §7.18). Between
    /// nodes only, never to clients.
    case presenterKey(String)

    /// Decodes and checks one published message, or says what is wrong with it.
    public static func decode(_ bytes: UnsafeRawBufferPointer, limits: ClientMessage.Limits = .init()) throws(ProtocolError) -> SharedChange {
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw ProtocolError(.badMessage, "not JSON: \(error)")
        }
        switch json["type"]?.string {
        case "state": return .state(try state(json, limits: limits))
        case "driver": return try driver(json)
        case "document": return .document(try document(json, limits: limits))
        case "access":
            guard let value = json["followKey"] else { throw ProtocolError(.badMessage, "access needs \"followKey\"") }
            if value.isNull { return .access(followKey: nil) }
            guard let record = value.string, (1...256).contains(record.utf8.count) else {
                throw ProtocolError(.badMessage, "access \"followKey\" must be a record of 1 to 256 bytes or null")
            }
            return .access(followKey: record)
        case "key":
            guard let record = json["record"]?.string, (1...256).contains(record.utf8.count) else {
                throw ProtocolError(.badMessage, "key \"record\" must be a record of 1 to 256 bytes")
            }
            return .presenterKey(record)
        case let other?: throw ProtocolError(.badMessage, "a node does not publish \"\(other.prefix(32))\" messages")
        case nil: throw ProtocolError(.badMessage, "missing \"type\"")
        }
    }

    public static func decode(_ bytes: [UInt8], limits: ClientMessage.Limits = .init()) throws(ProtocolError) -> SharedChange {
        let result: Result<SharedChange, ProtocolError> = bytes.withUnsafeBytes { buffer in
            do throws(ProtocolError) { return .success(try decode(buffer, limits: limits)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The largest `seq` a state may carry: JSON readers hold integers exactly up to 2^53.
    public static let maxSeq = 1 << 53

    /// A state: the scroll it could have come from, checked as a client's scroll is, with
    /// `seq`, `by`, `direction` and `doc` checked beside it.
    public static func state(_ json: JSON, limits: ClientMessage.Limits = .init()) throws(ProtocolError) -> ScrollState {
        guard case .number(let seqValue, let seqText)? = json["seq"], let seq = Int(seqText), seq >= 1, seq <= maxSeq, Double(seq) == seqValue else {
            throw ProtocolError(.badMessage, "state \"seq\" must be an integer from 1 to 2^53")
        }
        let update = try ClientMessage.scroll(json, limits)
        guard let byText = json["by"]?.string, let by = SessionID(byText) else {
            throw ProtocolError(.badMessage, "state \"by\" must be a session id (16 lowercase hex digits)")
        }
        guard let direction = json["direction"]?.string.flatMap(Direction.init(rawValue:)) else {
            throw ProtocolError(.badMessage, "state \"direction\" must be \"up\", \"down\" or \"none\"")
        }
        var doc: String?
        if let value = json["doc"], !value.isNull {
            guard let text = value.string, isFingerprint(text) else { throw ProtocolError(.badMessage, "state \"doc\" must be a fingerprint (16 hex digits)") }
            doc = text
        }
        var state = ScrollState.next(after: nil, applying: update, by: by.description, doc: doc)
        state.seq = seq
        state.direction = direction
        if let problem = state.problem(limits: limits) { throw ProtocolError(.badMessage, "state: \(problem)") }
        return state
    }

    public static func driver(_ json: JSON) throws(ProtocolError) -> SharedChange {
        var driver: SessionID?
        if let value = json["driver"], !value.isNull {
            guard let text = value.string, let id = SessionID(text) else {
                throw ProtocolError(.badMessage, "driver \"driver\" must be a session id or null")
            }
            driver = id
        }
        var name: String?
        if let value = json["name"], !value.isNull {
            guard let text = value.string, DisplayName.isValid(text) else {
                throw ProtocolError(.badMessage, "driver \"name\" must be a string of at most \(DisplayName.maxCharacters) characters and \(DisplayName.maxBytes) bytes")
            }
            name = text
        }
        return .driver(driver, name: driver == nil ? nil : name)
    }

    public static func document(_ json: JSON, limits: ClientMessage.Limits = .init()) throws(ProtocolError) -> SharedDocument {
        guard let text = json["text"]?.string else { throw ProtocolError(.badMessage, "document \"text\" must be a string") }
        guard text.utf8.count <= limits.maxDocumentBytes else {
            throw ProtocolError(.tooLarge, "document of \(text.utf8.count) bytes exceeds \(limits.maxDocumentBytes)")
        }
        guard let name = json["name"]?.string, name.utf8.count <= limits.maxNameBytes else {
            throw ProtocolError(.badMessage, "document \"name\" must be a string of at most \(limits.maxNameBytes) bytes")
        }
        guard let format = json["format"]?.string.flatMap(SharedDocument.Format.init(rawValue:)) else {
            throw ProtocolError(.badMessage, "document \"format\" must be \"text\" or \"markdown\"")
        }
        guard let byText = json["by"]?.string, let by = SessionID(byText) else {
            throw ProtocolError(.badMessage, "document \"by\" must be a session id")
        }
        // The fingerprint is computed from the text; the published one is not taken.
        return SharedDocument(name: name, format: format, text: text, by: by.description)
    }

    /// The message a node publishes to make a room private (`access`).
    public static func access(followKey record: String?) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.field("type", "access")
        w.key("followKey")
        if let record { w.string(record) } else { w.null() }
        w.endObject()
        return w.bytes
    }

    /// The message a merge publishes with the presenter key record it puts back (`key`).
    public static func key(record: String) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.field("type", "key")
        w.field("record", record)
        w.endObject()
        return w.bytes
    }

    /// 16 lowercase hex digits.
    static func isFingerprint(_ text: String) -> Bool {
        text.utf8.count == 16 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

/// A member's display name (`name=` on a room URL): at most 64 characters and 256 bytes,
/// on every node alike.
public enum DisplayName {
    public static let maxCharacters = 64
    public static let maxBytes = 256

    /// `text` cut to the limits at a character boundary.
    public static func clipped(_ text: Substring) -> String {
        var name = ""
        var bytes = 0
        for character in text.prefix(maxCharacters) {
            let size = character.utf8.count
            guard bytes + size <= maxBytes else { break }
            name.append(character)
            bytes += size
        }
        return name
    }

    public static func isValid(_ text: String) -> Bool {
        text.utf8.count <= maxBytes && text.count <= maxCharacters
    }
}

extension Presence {
    /// The largest count one node may report for a room: far above any room's member limit,
    /// small enough that the sum over any number of nodes cannot overflow.
    public static let maxNodeCount = 1_000_000

    /// Counts another node reported, if each is a whole number from 0 to `maxNodeCount` and
    /// detached followers are not more than followers.
    public init?(reported fields: some Collection<Substring>) {
        let numbers = fields.compactMap { field -> Int? in
            guard field.utf8.count <= 7, let value = Int(field), (0...Presence.maxNodeCount).contains(value) else { return nil }
            return value
        }
        guard fields.count == 3, numbers.count == 3, numbers[2] <= numbers[1] else { return nil }
        self.init(presenters: numbers[0], followers: numbers[1], detached: numbers[2])
    }

    /// The sum of two counts, saturating at `Int.max` (never a trap).
    public func adding(_ other: Presence) -> Presence {
        func sum(_ a: Int, _ b: Int) -> Int {
            let (value, overflow) = a.addingReportingOverflow(b)
            return overflow ? Int.max : value
        }
        return Presence(presenters: sum(presenters, other.presenters), followers: sum(followers, other.followers),
                        detached: sum(detached, other.detached))
    }
}
