/// The subprotocol this module speaks.
public let protocolName = "scrollsync.v1"

/// The query parameters of a room URL that carry secrets (a presenter `key`, a `followKey`, a
/// `token`): never shown, logged or recorded with their values.
public let secretQueryParameters = ["key", "followKey", "token"]

/// Error codes carried by `error` messages (Protocol/PROTOCOL.md, "Errors").
public enum ErrorCode: String, Sendable, Equatable {
    case badMessage = "bad_message"
    case notDriver = "not_driver"
    case unauthorized
    case tooLarge = "too_large"
    case rateLimited = "rate_limited"
}

/// A refused message: the code and a message that says what was wrong.
public struct ProtocolError: Error, Sendable, Equatable {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// A message from a client.
public enum ClientMessage: Sendable, Equatable {
    case scroll(ScrollUpdate)
    case control(take: Bool)
    case document(name: String, format: SharedDocument.Format, text: String)
    case follow(Bool)

    /// Limits on what a client may send.
    public struct Limits: Sendable {
        /// Largest shared document text: 1 MiB covers a long book chapter.
        public var maxDocumentBytes = 1 << 20
        /// Offsets and extents beyond this are refused: 10^12 units is far beyond any document.
        public var maxExtent = 1e12
        /// Longest anchor id: 256 bytes.
        public var maxAnchorBytes = 256
        /// Longest document name: 256 bytes.
        public var maxNameBytes = 256
        public init() {}
    }

    /// Decodes and validates one text message.
    public static func decode(_ bytes: UnsafeRawBufferPointer, limits: Limits = .init()) throws(ProtocolError) -> ClientMessage {
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw ProtocolError(.badMessage, "not JSON: \(error)")
        }
        guard case .object = json else { throw ProtocolError(.badMessage, "a message must be a JSON object") }
        guard let type = json["type"]?.string else { throw ProtocolError(.badMessage, "missing \"type\"") }
        switch type {
        case "scroll":
            return .scroll(try scroll(json, limits))
        case "control":
            switch json["action"]?.string {
            case "take": return .control(take: true)
            case "release": return .control(take: false)
            default: throw ProtocolError(.badMessage, "control \"action\" must be \"take\" or \"release\"")
            }
        case "document":
            guard let text = json["text"]?.string else { throw ProtocolError(.badMessage, "document \"text\" must be a string") }
            guard text.utf8.count <= limits.maxDocumentBytes else {
                throw ProtocolError(.tooLarge, "document of \(text.utf8.count) bytes exceeds \(limits.maxDocumentBytes)")
            }
            let name = json["name"]?.string ?? "document"
            guard name.utf8.count <= limits.maxNameBytes else {
                throw ProtocolError(.badMessage, "document \"name\" longer than \(limits.maxNameBytes) bytes")
            }
            let formatText = json["format"]?.string ?? "text"
            guard let format = SharedDocument.Format(rawValue: formatText) else {
                throw ProtocolError(.badMessage, "document \"format\" must be \"text\" or \"markdown\"")
            }
            return .document(name: name, format: format, text: text)
        case "follow":
            guard let following = json["following"]?.bool else { throw ProtocolError(.badMessage, "follow \"following\" must be true or false") }
            return .follow(following)
        default:
            throw ProtocolError(.badMessage, "unknown message type \"\(type)\"")
        }
    }

    public static func decode(_ text: String, limits: Limits = .init()) throws(ProtocolError) -> ClientMessage {
        var text = text
        let result: Result<ClientMessage, ProtocolError> = text.withUTF8 { buffer in
            do throws(ProtocolError) { return .success(try decode(UnsafeRawBufferPointer(buffer), limits: limits)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// A scroll's fields, checked (also for states other nodes publish: `SharedChange`).
    static func scroll(_ json: JSON, _ limits: Limits) throws(ProtocolError) -> ScrollUpdate {
        func number(_ name: String, required: Bool) throws(ProtocolError) -> Double? {
            guard let value = json[name], !value.isNull || required else { return nil }
            guard let number = value.double else { throw ProtocolError(.badMessage, "\"\(name)\" must be a number") }
            guard number.isFinite, number >= 0, number <= limits.maxExtent else {
                throw ProtocolError(.badMessage, "\"\(name)\" must be a finite number from 0 to \(Int(limits.maxExtent))")
            }
            return number
        }
        guard json["offset"] != nil else { throw ProtocolError(.badMessage, "scroll needs \"offset\"") }
        var update = ScrollUpdate(offset: try number("offset", required: true)!)
        update.viewport = try number("viewport", required: false)
        update.content = try number("content", required: false)
        if let anchor = json["anchor"], !anchor.isNull {
            guard let id = anchor["id"]?.string, !id.isEmpty, id.utf8.count <= limits.maxAnchorBytes else {
                throw ProtocolError(.badMessage, "\"anchor.id\" must be a string of 1 to \(limits.maxAnchorBytes) bytes")
            }
            let fraction = anchor["fraction"]?.double ?? 0
            guard fraction.isFinite, (0...1).contains(fraction) else {
                throw ProtocolError(.badMessage, "\"anchor.fraction\" must be a number from 0 to 1")
            }
            update.anchor = Anchor(id: id, fraction: fraction)
        }
        if let t = json["t"], !t.isNull {
            guard case .number(_, let text) = t, let value = Int64(text), value >= -(1 << 53), value <= 1 << 53 else {
                throw ProtocolError(.badMessage, "\"t\" must be an integer of at most 2^53 in magnitude")
            }
            update.t = String(value)
        }
        return update
    }
}

/// Presence counts of a room.
public struct Presence: Sendable, Equatable {
    public var presenters = 0
    public var followers = 0
    /// Followers that scroll on their own.
    public var detached = 0
    public init(presenters: Int = 0, followers: Int = 0, detached: Int = 0) {
        self.presenters = presenters
        self.followers = followers
        self.detached = detached
    }
}

public enum Role: String, Sendable, Equatable {
    case presenter, follower
}

/// Encoders for server messages. Each returns the UTF-8 JSON text of one message.
public enum ServerMessage {
    public static func state(_ state: ScrollState) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.field("type", "state")
        writeStateFields(state, into: &w)
        w.endObject()
        return w.bytes
    }

    public static func welcome(room: String, you: String, role: Role, state: ScrollState?, driver: String?, driverName: String? = nil,
                               presence: Presence, document: SharedDocument?) -> [UInt8] {
        welcome(room: room, role: role, state: state, hasDriver: driver != nil, driverName: driverName, presence: presence, document: document,
                you: { $0.string(you) }, driver: { if let driver { $0.string(driver) } else { $0.null() } })
    }

    /// The welcome as the server writes it: ids straight from their numbers (no String each).
    public static func welcome(room: String, you: SessionID, role: Role, state: ScrollState?, driver: SessionID?, driverName: String? = nil,
                               presence: Presence, document: SharedDocument?, recording: String? = nil) -> [UInt8] {
        welcome(room: room, role: role, state: state, hasDriver: driver != nil, driverName: driverName, presence: presence, document: document,
                recording: recording, you: { $0.string(you) }, driver: { if let driver { $0.string(driver) } else { $0.null() } })
    }

    /// Written in fragments (the welcome's shape is fixed): one per run of punctuation and
    /// names between the values, as every member joining writes one.
    private static func welcome(room: String, role: Role, state: ScrollState?, hasDriver: Bool, driverName: String?, presence: Presence,
                                document: SharedDocument?, recording: String? = nil, you: (inout JSONWriter) -> Void, driver: (inout JSONWriter) -> Void) -> [UInt8] {
        var w = JSONWriter(capacity: 512)  // 210 bytes in an undriven room, some 450 with a state: one allocation
        w.fragment(#"{"type":"welcome","protocol":"#)
        w.string(protocolName)
        w.fragment(#","room":"#)
        w.string(room)
        w.fragment(#","you":"#)
        you(&w)
        w.fragment(role == .presenter ? #","role":"presenter","state":"# : #","role":"follower","state":"#)
        if let state {
            w.beginObject()
            writeStateFields(state, into: &w)
            w.endObject()
        } else {
            w.null()
        }
        w.fragment(#","driver":"#)
        driver(&w)
        w.fragment(#","driverName":"#)
        if let driverName, hasDriver { w.string(driverName) } else { w.null() }
        w.fragment(#","presence":"#)
        writePresence(presence, into: &w)
        w.fragment(#","doc":"#)
        if let document { w.string(document.fingerprint) } else { w.null() }
        if let recording {
            w.fragment(#","recording":"#)
            w.string(recording)
        }
        w.endObject()
        return w.bytes
    }

    public static func driver(_ driver: String?, name: String?) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.field("type", "driver")
        w.key("driver")
        if let driver { w.string(driver) } else { w.null() }
        w.key("name")
        if let name { w.string(name) } else { w.null() }
        w.endObject()
        return w.bytes
    }

    public static func document(_ document: SharedDocument) -> [UInt8] {
        var w = JSONWriter(capacity: document.text.utf8.count + 128)
        w.beginObject()
        w.field("type", "document")
        w.field("name", document.name)
        w.field("format", document.format.rawValue)
        w.field("doc", document.fingerprint)
        w.field("by", document.by)
        w.field("text", document.text)
        w.endObject()
        return w.bytes
    }

    public static func presence(_ presence: Presence) -> [UInt8] {
        var w = JSONWriter(capacity: 96)
        w.fragment(#"{"type":"presence","presenters":"#)
        w.int(presence.presenters)
        w.fragment(#","followers":"#)
        w.int(presence.followers)
        w.fragment(#","detached":"#)
        w.int(presence.detached)
        w.endObject()
        return w.bytes
    }

    public static func error(_ error: ProtocolError) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.field("type", "error")
        w.field("code", error.code.rawValue)
        w.field("message", error.message)
        w.endObject()
        return w.bytes
    }

    private static func writePresence(_ presence: Presence, into w: inout JSONWriter) {
        w.fragment(#"{"presenters":"#)
        w.int(presence.presenters)
        w.fragment(#","followers":"#)
        w.int(presence.followers)
        w.fragment(#","detached":"#)
        w.int(presence.detached)
        w.endObject()
    }

    private static func writeStateFields(_ state: ScrollState, into w: inout JSONWriter) {
        w.field("seq", state.seq)
        w.field("offset", state.offset)
        if let viewport = state.viewport { w.field("viewport", viewport) }
        if let content = state.content { w.field("content", content) }
        if let progress = state.progress { w.field("progress", progress) }
        w.field("direction", state.direction.rawValue)
        if let anchor = state.anchor { w.field("anchor", anchor) }
        w.field("atTop", state.atTop)
        w.field("atBottom", state.atBottom)
        w.field("by", state.by)
        if let t = state.t { w.key("t"); w.raw(t) }
        if let doc = state.doc { w.field("doc", doc) }
    }
}
