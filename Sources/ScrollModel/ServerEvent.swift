/// A message from the server, decoded (the client side of Protocol/PROTOCOL.md §4.1).
public enum ServerEvent: Sendable, Equatable {
    case welcome(Welcome)
    case state(ScrollState)
    case driver(String?, name: String?)
    case document(SharedDocument)
    case presence(Presence)
    case error(code: String, message: String)

    public struct Welcome: Sendable, Equatable {
        public var room: String
        public var you: String
        public var role: Role
        public var state: ScrollState?
        public var driver: String?
        /// The driver's display name (servers before it was sent: nil until a `driver` message).
        public var driverName: String?
        public var presence: Presence
        public var doc: String?

        public init(room: String, you: String, role: Role, state: ScrollState?, driver: String?, driverName: String? = nil,
                    presence: Presence, doc: String?) {
            self.driverName = driverName
            self.room = room
            self.you = you
            self.role = role
            self.state = state
            self.driver = driver
            self.presence = presence
            self.doc = doc
        }
    }

    /// Decodes one server message; nil for a type this version does not know (ignored, §1).
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(JSONError) -> ServerEvent? {
        let json = try JSON.parse(bytes)
        switch json["type"]?.string {
        case "welcome":
            return .welcome(Welcome(
                room: json["room"]?.string ?? "", you: json["you"]?.string ?? "",
                role: Role(rawValue: json["role"]?.string ?? "") ?? .follower,
                state: json["state"].flatMap(state), driver: json["driver"]?.string, driverName: json["driverName"]?.string,
                presence: json["presence"].map(presence) ?? Presence(), doc: json["doc"]?.string))
        case "state":
            return state(json).map { .state($0) }
        case "driver":
            return .driver(json["driver"]?.string, name: json["name"]?.string)
        case "document":
            var document = SharedDocument(
                name: json["name"]?.string ?? "document",
                format: SharedDocument.Format(rawValue: json["format"]?.string ?? "text") ?? .text,
                text: json["text"]?.string ?? "", by: json["by"]?.string ?? "")
            if let doc = json["doc"]?.string { document.fingerprint = doc }
            return .document(document)
        case "presence":
            return .presence(presence(json))
        case "error":
            return .error(code: json["code"]?.string ?? "", message: json["message"]?.string ?? "")
        default:
            return nil
        }
    }

    public static func decode(_ text: String) throws(JSONError) -> ServerEvent? {
        var text = text
        let result: Result<ServerEvent?, JSONError> = text.withUTF8 { buffer in
            do throws(JSONError) { return .success(try decode(UnsafeRawBufferPointer(buffer))) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func presence(_ json: JSON) -> Presence {
        Presence(presenters: count(json["presenters"]), followers: count(json["followers"]), detached: count(json["detached"]))
    }

    /// A non-negative whole number, or 0 for anything else (never a trap on 1e400).
    private static func count(_ value: JSON?) -> Int {
        guard let double = value?.double, double.isFinite, double >= 0, double < 1e15 else { return 0 }
        return Int(double)
    }

    /// A finite number, or nil.
    private static func finite(_ value: JSON?) -> Double? {
        guard let double = value?.double, double.isFinite else { return nil }
        return double
    }

    /// A state, or nil when a required member is missing or any number is not finite.
    private static func state(_ json: JSON) -> ScrollState? {
        guard let seqValue = finite(json["seq"]), seqValue >= 1, seqValue < 1e15, let offset = finite(json["offset"]) else { return nil }
        let seq = Int(seqValue)
        for name in ["viewport", "content", "progress"] where json[name] != nil && !(json[name]!.isNull) {
            guard finite(json[name]) != nil else { return nil }
        }
        var anchor: Anchor?
        if let a = json["anchor"], let id = a["id"]?.string {
            anchor = Anchor(id: id, fraction: min(1, max(0, finite(a["fraction"]) ?? 0)))
        }
        var t: String?
        if case .number(_, let text)? = json["t"] { t = text }
        return ScrollState(
            seq: seq, offset: offset, viewport: json["viewport"]?.double, content: json["content"]?.double,
            progress: json["progress"].flatMap(finite).map { min(1, max(0, $0)) }, direction: Direction(rawValue: json["direction"]?.string ?? "") ?? .none,
            anchor: anchor, atTop: json["atTop"]?.bool ?? false, atBottom: json["atBottom"]?.bool ?? false,
            by: json["by"]?.string ?? "", t: t, doc: json["doc"]?.string)
    }
}

extension ClientMessage {
    /// The message as JSON text (what a client sends).
    public var encoded: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        switch self {
        case .scroll(let update):
            w.field("type", "scroll")
            w.field("offset", update.offset)
            if let viewport = update.viewport { w.field("viewport", viewport) }
            if let content = update.content { w.field("content", content) }
            if let anchor = update.anchor { w.field("anchor", anchor) }
            if let t = update.t { w.key("t"); w.raw(t) }
        case .control(let take):
            w.field("type", "control")
            w.field("action", take ? "take" : "release")
        case .document(let name, let format, let text):
            w.field("type", "document")
            w.field("name", name)
            w.field("format", format.rawValue)
            w.field("text", text)
        case .follow(let following):
            w.field("type", "follow")
            w.field("following", following)
        }
        w.endObject()
        return w.bytes
    }
}
