import ScrollModel

/// What a room tells its members after a change.
public enum Broadcast: Sendable, Equatable {
    indirect case state(ScrollState)
    case driver(SessionID?, name: String?)
    case document(SharedDocument)
    case presence(Presence)
}

/// One room's rules, without I/O: who is in it, who drives, the state, the document.
/// Every change returns the broadcasts it causes; a refused message returns an error
/// for its sender and changes nothing.
public struct RoomCore: Sendable {
    /// 1–64 of `A–Z a–z 0–9 . _ -`, but not `.` or `..`, which browsers rewrite out of a path:
    /// what a room may be called, in a URL, a store's folder or a token's claim.
    package static func isValidName(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { bytes in
            guard (1...64).contains(bytes.count), bytes.count > 2 || !bytes.allSatisfy({ $0 == UInt8(ascii: ".") }) else { return false }
            return bytes.allSatisfy {
                switch $0 {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
                default: false
                }
            }
        }
    }

    /// Two bytes, so a room's member table stays small; names are kept apart (`names`).
    public struct Member: Sendable, Equatable {
        public var role: Role
        public var following = true

        public init(role: Role, following: Bool = true) {
            self.role = role
            self.following = following
        }
    }

    /// What a joining session needs to be in sync at once. One object, handed from the room
    /// to its member as a reference (a value would be copied whole, some 250 bytes, at every
    /// step on its way).
    public final class Welcome: Sendable, Equatable {
        public let state: ScrollState?
        public let driver: SessionID?
        /// The driver's display name, when it gave one.
        public let driverName: String?
        public let presence: Presence
        public let document: SharedDocument?
        /// For a presenter: the room's recording (`on`, `stopped`, `refused`: asked for, not
        /// kept), and why it is not kept; nil when it is not recorded and nobody asked.
        public let recording: String?
        public let recordingProblem: String?

        public init(state: ScrollState?, driver: SessionID?, driverName: String? = nil, presence: Presence, document: SharedDocument?,
                    recording: String? = nil, recordingProblem: String? = nil) {
            self.state = state
            self.driver = driver
            self.driverName = driverName
            self.presence = presence
            self.document = document
            self.recording = recording
            self.recordingProblem = recordingProblem
        }

        /// The same welcome with other counts (e.g. of the room's members on every node).
        public func counting(_ presence: Presence) -> Welcome {
            presence == self.presence ? self
                : Welcome(state: state, driver: driver, driverName: driverName, presence: presence, document: document,
                          recording: recording, recordingProblem: recordingProblem)
        }

        /// The same welcome saying what becomes of the room's recording.
        public func noting(recording: String, problem: String?) -> Welcome {
            Welcome(state: state, driver: driver, driverName: driverName, presence: presence, document: document,
                    recording: recording, recordingProblem: problem)
        }

        public static func == (a: Welcome, b: Welcome) -> Bool {
            a.state == b.state && a.driver == b.driver && a.driverName == b.driverName && a.presence == b.presence && a.document == b.document
                && a.recording == b.recording && a.recordingProblem == b.recordingProblem
        }
    }

    public let name: String
    public private(set) var state: ScrollState?
    public private(set) var driver: SessionID?
    public private(set) var document: SharedDocument?
    public private(set) var members = MemberTable()
    /// Display names of the members that gave one (load-test followers and many others do not).
    public private(set) var names: [SessionID: String] = [:]
    /// The name another node gave with its driver (a session of that node is not in `names`).
    private var adoptedDriverName: (driver: SessionID, name: String)?
    private var presenterKey: [UInt8]?
    /// A private room's follow key, as the hub keeps it (a record, not the key); nil: public.
    public private(set) var followKey: String?
    public var isPrivate: Bool { followKey != nil }
    /// Its presenter key was lost (a damaged store): no presenter may join, and no key may
    /// be bound, until an operator restores it. Followers still see its last state.
    public private(set) var isLocked = false
    /// The next state's `seq` is above this (a restored room continues above what it may
    /// have sent before a crash).
    private var seqBase = 0

    public init(name: String) { self.name = name }

    /// Restores a room (e.g. from a store), without members; its next `seq` is above `seqBase`.
    public init(name: String, state: ScrollState?, document: SharedDocument?, presenterKey: [UInt8]?, locked: Bool = false, seqBase: Int = 0,
                followKey: String? = nil) {
        self.name = name
        self.followKey = followKey
        self.state = state
        self.document = document
        self.presenterKey = presenterKey
        self.seqBase = seqBase
        isLocked = locked && presenterKey == nil
    }

    /// The `seq` of the newest state, or what the next one continues from.
    public var lastSeq: Int { max(state?.seq ?? 0, seqBase) }

    public var hasPresenterKey: Bool { presenterKey != nil }
    /// Whether the room is driven, here or on another node: it has a state, a driver, a
    /// document or a presenter key. (Tags only: `state != nil` here resolves to the
    /// optionals' `==`, which copies a state and a document into temporaries, some 500
    /// instructions a step.)
    public var isDriven: Bool {
        if case .some = driver { return true }
        if case .some = presenterKey { return true }
        if case .some = state { return true }
        if case .some = document { return true }
        return false
    }
    /// The presenter key as the room holds it (the hub gives digests, not keys).
    public var presenterKeyText: String? { presenterKey.map { String(decoding: $0, as: UTF8.self) } }
    public var isEmpty: Bool { members.isEmpty }

    /// Presence counts, kept as members come, go and detach.
    public private(set) var presence = Presence()

    private mutating func count(_ member: Member, _ delta: Int) {
        if member.role == .presenter {
            presence.presenters += delta
        } else {
            presence.followers += delta
            if !member.following { presence.detached += delta }
        }
    }

    /// Adds a session. A presenter must give the room's key when it has one; the first
    /// presenter of a keyless room with no other presenter binds the key it gives.
    /// A presenter that joins while nobody drives takes control.
    /// With `claimsControl` false the caller decides control (a shared hub asks its lease).
    /// A private room (one with a follow key) takes a follower only when `followKey` says the
    /// follower's key matches the room's record (the caller hashes; the core decides).
    /// With `authorized`, an application's signed token has already admitted the session in
    /// its role: no key is asked for.
    /// A private room, and a follow key (`setsFollowKey`: a presenter gave one), need a presenter
    /// who proves itself: with a token, with the room's presenter key, or by binding its key to
    /// a room that has none and no presenter. A presenter without a key could otherwise make a
    /// room private that anyone may present, or present a private room.
    public mutating func join(_ id: SessionID, role: Role, name: String?, key: String?, keyRequired: Bool = false,
                              claimsControl: Bool = true, followKey: ((String) -> Bool)? = nil,
                              authorized: Bool = false, setsFollowKey: Bool = false) -> Result<(Welcome, [Broadcast]), ProtocolError> {
        var broadcasts = [Broadcast]()
        return join(id, role: role, name: name, key: key, keyRequired: keyRequired, claimsControl: claimsControl, followKey: followKey,
                    authorized: authorized, setsFollowKey: setsFollowKey) { broadcasts.append($0) }.map { ($0, broadcasts) }
    }

    /// `join`, handing its broadcasts to `emit` in order (no array of them).
    public mutating func join(_ id: SessionID, role: Role, name: String?, key: String?, keyRequired: Bool = false,
                              claimsControl: Bool = true, followKey: ((String) -> Bool)? = nil, authorized: Bool = false,
                              setsFollowKey: Bool = false, emit: (Broadcast) -> Void) -> Result<Welcome, ProtocolError> {
        if role == .follower, !authorized, let required = self.followKey {
            guard let followKey, followKey(required) else {
                return .failure(ProtocolError(.unauthorized, followKey == nil
                    ? "room \(self.name) is private: follow it with its follow key (followKey=…)"
                    : "wrong follow key for room \(self.name)"))
            }
        }
        if role == .presenter && !authorized {
            if let refusal = presenterRefusal(key: key, keyRequired: keyRequired, authorized: authorized, setsFollowKey: setsFollowKey) {
                return .failure(refusal)
            }
            if presenterKey == nil, let key, !key.isEmpty, presence.presenters == 0 { presenterKey = Array(key.utf8) }  // binds it
        }
        if let previous = members[id] { count(previous, -1) }
        let member = Member(role: role)
        members[id] = member
        if let name { names[id] = name } else if !names.isEmpty { names[id] = nil }  // most members give none: no hashing then
        count(member, 1)
        if role == .presenter && driver == nil && claimsControl {
            driver = id
            emit(.driver(id, name: name))
        }
        emit(.presence(presence))
        return .success(Welcome(state: state, driver: driver, driverName: driverName, presence: presence, document: document))
    }

    /// Why a presenter may not join (nil: it may), changing nothing: the checks of `join`
    /// (which then binds the key given to a keyless room that has no presenter).
    public func presenterRefusal(key: String?, keyRequired: Bool = false, authorized: Bool = false, setsFollowKey: Bool = false) -> ProtocolError? {
        guard !authorized else { return nil }
        guard !isLocked else {
            return ProtocolError(.unauthorized, "room \(self.name) is locked: its presenter key could not be read back from the server's store; the operator must restore it")
        }
        let given = key.map { Array($0.utf8) }
        if let presenterKey {
            guard let given, ConstantTime.equal(given, presenterKey) else {
                return ProtocolError(.unauthorized, "wrong or missing presenter key for room \(self.name)")
            }
        } else if keyRequired && (given?.isEmpty ?? true) {
            return ProtocolError(.unauthorized, "this server requires a presenter key (key=…)")
        } else if isPrivate {
            // Binding a key is no proof here: the room's follow key was set by a presenter who gave one.
            return ProtocolError(.unauthorized, "room \(self.name) is private and has no presenter key: present it with a presenter token (token=…)")
        } else if let given, !given.isEmpty, presence.presenters == 0 {
            return nil  // `join` binds it
        } else if setsFollowKey {
            return ProtocolError(.unauthorized, Self.followKeyNeedsProof)
        }
        return nil
    }

    /// Why a follow key from a presenter who proved nothing is refused.
    public static let followKeyNeedsProof = "a follow key (followKey=…) may be set only by a presenter who gives the room's presenter key (key=…) "
        + "or a presenter token: without one, anyone could present the private room"

    /// Removes a session; frees control if it drove.
    public mutating func leave(_ id: SessionID) -> [Broadcast] {
        guard let member = members.removeValue(forKey: id) else { return [] }
        names.removeValue(forKey: id)
        count(member, -1)
        var broadcasts = [Broadcast]()
        if driver == id {
            driver = nil
            broadcasts.append(.driver(nil, name: nil))
        }
        broadcasts.append(.presence(presence))
        return broadcasts
    }

    /// Applies a message from a member.
    public mutating func receive(_ message: ClientMessage, from id: SessionID) -> Result<[Broadcast], ProtocolError> {
        if case .scroll(let update) = message {
            switch proposeScroll(update, from: id) {
            case .failure(let error): return .failure(error)
            case .success(let next):
                state = next
                return .success([.state(next)])
            }
        }
        switch check(message, from: id) {
        case .failure(let error): return .failure(error)
        case .success(false): return .success([])
        case .success(true): break
        }
        switch message {
        case .control(let take):
            driver = take ? id : nil
            return .success([.driver(driver, name: take ? names[id] : nil)])
        case .document(let documentName, let format, let text):
            let shared = SharedDocument(name: documentName, format: format, text: text, by: id.description)
            document = shared
            return .success([.document(shared)])
        case .follow(let following):
            presence.detached += following ? -1 : 1
            members[id]?.following = following
            return .success([.presence(presence)])
        case .scroll:
            return .success([])  // applied above
        }
    }

    /// Whether member `id` may send `message` and it would change the room (a driver taking
    /// control again, a follower saying what it already does, change nothing), or why it is
    /// refused; changes nothing. A scroll is checked by `proposeScroll`. A shared room checks
    /// a change here before it goes to the engine.
    public func check(_ message: ClientMessage, from id: SessionID) -> Result<Bool, ProtocolError> {
        guard let member = members[id] else { return .failure(ProtocolError(.badMessage, "not a member of \(name)")) }
        switch message {
        case .scroll:
            return .success(true)
        case .control(let take):
            guard member.role == .presenter else { return .failure(ProtocolError(.unauthorized, "only presenters may take control")) }
            if take { return .success(driver != id) }
            guard driver == id else { return .failure(ProtocolError(.notDriver, "you do not drive this room")) }
            return .success(true)
        case .document:
            guard member.role == .presenter else { return .failure(ProtocolError(.unauthorized, "only presenters may share a document")) }
            return .success(true)
        case .follow(let following):
            return .success(member.role == .follower && member.following != following)
        }
    }

    /// The state a scroll from `id` would make (after `previous`, by default the room's),
    /// or why it is refused; changes nothing.
    public func proposeScroll(_ update: ScrollUpdate, from id: SessionID, after previous: ScrollState?? = nil) -> Result<ScrollState, ProtocolError> {
        guard let member = members[id] else { return .failure(ProtocolError(.badMessage, "not a member of \(name)")) }
        guard driver == id else {
            return .failure(ProtocolError(.notDriver, member.role == .presenter
                ? "you do not drive this room; send {\"type\":\"control\",\"action\":\"take\"} first"
                : "followers cannot scroll the room"))
        }
        var next = ScrollState.next(after: previous ?? state, applying: update, by: id.description, doc: document?.fingerprint)
        if next.seq <= seqBase { next.seq = seqBase + 1 }
        return .success(next)
    }

    // MARK: Changes made elsewhere (another node of a shared hub)

    /// Takes a state decided elsewhere; an older or equal `seq` is ignored. Returns whether it was newer.
    public mutating func adopt(state newState: ScrollState) -> Bool {
        guard newState.seq > state?.seq ?? 0 else { return false }
        state = newState
        return true
    }

    /// Takes a driver decided elsewhere (it may be a session of another node).
    public mutating func adopt(driver newDriver: SessionID?, name: String? = nil) {
        driver = newDriver
        adoptedDriverName = newDriver.flatMap { id in name.map { (id, $0) } }
    }

    /// The driver's display name, wherever it is connected.
    public var driverName: String? {
        guard let driver else { return nil }
        return names[driver] ?? (adoptedDriverName?.driver == driver ? adoptedDriverName?.name : nil)
    }

    public mutating func adopt(document newDocument: SharedDocument) { document = newDocument }

    /// Makes the room private with this follow key record (or public again with nil).
    public mutating func adopt(followKey record: String?) { followKey = record }

    /// The room's next state is numbered above `seq` (the shared room's, from its hash), even if
    /// no state it holds is that new.
    public mutating func continueAbove(_ seq: Int) { seqBase = max(seqBase, seq) }

    /// Takes the room's key digest as kept elsewhere.
    public mutating func adopt(presenterKey digest: String?) {
        presenterKey = digest.map { Array($0.utf8) }
        if presenterKey != nil { isLocked = false }
    }
}
