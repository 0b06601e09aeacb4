import ScrollModel

/// A key press, decoded from the terminal's bytes.
public enum Key: Sendable, Equatable {
    case character(Character)
    case up, down, pageUp, pageDown, home, end, left, right
    case f1, enter, backspace, escape
    case interrupt  // Ctrl-C
}

/// The connection as the status line shows it.
public enum ConnectionStatus: Sendable, Equatable {
    case connecting
    case connected
    case waiting(retryIn: Double, reason: String)
    /// The server refuses this viewer for good (it no longer retries).
    case refused(reason: String)
    case stopped
}

/// Everything that can happen to the viewer (Elm's `Msg`).
public enum ViewerMessage: Sendable {
    case key(Key)
    case resize(width: Int, height: Int)
    case connection(ConnectionStatus)
    case server(ServerEvent)
    /// Wall-clock time in ms, for pacing updates and the time since the presenter moved.
    case clock(Int64)
    /// The link's measured round trip.
    case roundTrip(milliseconds: Int)
    /// A recording's playback as the status line shows it (`▶ 1:23 / 10:00 ×2`), in place of
    /// the connection.
    case playback(String)
    /// The presented file was saved with this text: the room gets it, the place is kept.
    case documentEdited(name: String, format: SharedDocument.Format, text: String)
    /// The presented file was saved but cannot be read (why): the last version stays.
    case documentUnreadable(String)
}

/// What `update` asks the program to do (Elm's `Cmd`).
public enum ViewerCommand: Sendable, Equatable {
    case send(ClientMessage)
    case quit
}

/// The state of `present` and `follow` (Elm's `Model`).
public struct ViewerModel: Sendable {
    public enum Role: Sendable { case presenter, follower }

    public let role: Role
    public let room: String
    public internal(set) var layout: Layout?
    public internal(set) var width: Int
    public internal(set) var height: Int
    /// The top row of the document area.
    public internal(set) var top = 0
    public internal(set) var direction: Direction = .none
    public internal(set) var connection: ConnectionStatus = .connecting
    public internal(set) var you: String?
    public internal(set) var driver: String?
    public internal(set) var driverName: String?
    public internal(set) var presence = Presence()
    public internal(set) var lastState: ScrollState?
    /// Tracking the driver (false after local scrolling, until `f`): followers, and
    /// presenters while another session drives.
    public internal(set) var following = true
    /// The link's round trip (ping to pong), the connection's health.
    public internal(set) var roundTripMs: Int?
    /// When (this clock, ms) the presenter's place last changed here.
    public internal(set) var movedAtMs: Int64?
    /// While offline: when (this clock, ms) the next attempt starts.
    public internal(set) var retryAtMs: Int64?
    /// The room's document fingerprint, as announced.
    public internal(set) var roomDocument: String?
    /// The follower renders its own copy (`--doc`).
    public let hasLocalDocument: Bool
    /// The terminal sends this view keys. False for a stream the server renders for `curl`
    /// (`GET /rooms/NAME/tty`): there Ctrl-C, which ends `curl`, is the only key.
    public let readsKeys: Bool
    public internal(set) var notice: String?
    /// Playing a recording: where it is (shown in place of the connection).
    public internal(set) var playback: String?
    /// The keys are shown over the document (`h`, F1) until the next key.
    public internal(set) var showingHelp = false
    /// `/` and `?`: the prompt, the last pattern and the match shown.
    public internal(set) var search = Search()
    /// Presenters: the view moved and the room has not heard yet.
    var pendingUpdate = false
    var lastSentMs: Int64 = 0
    var nowMs: Int64 = 0
    /// The presenter's document text, shared on every (re)connect.
    var sharedText: (name: String, format: SharedDocument.Format, text: String)?

    /// A presenter showing and sharing `text`.
    public static func presenter(room: String, name: String, format: SharedDocument.Format, text: String, width: Int, height: Int) -> ViewerModel {
        ViewerModel(role: .presenter, room: room, document: Document(text: text, format: format, name: name), width: width, height: height,
                     shared: (name, format, text), local: false, readsKeys: true)
    }

    /// A follower, with its own copy of the document or waiting for the room's.
    /// `readsKeys`: false for a view streamed to a terminal that sends none (`curl`).
    public static func follower(room: String, localDocument: Document?, width: Int, height: Int, readsKeys: Bool = true) -> ViewerModel {
        ViewerModel(role: .follower, room: room, document: localDocument, width: width, height: height, shared: nil, local: localDocument != nil,
                    readsKeys: readsKeys)
    }

    private init(role: Role, room: String, document: Document?, width: Int, height: Int,
                 shared: (name: String, format: SharedDocument.Format, text: String)?, local: Bool, readsKeys: Bool) {
        self.role = role
        self.room = room
        self.width = width
        self.height = height
        self.sharedText = shared
        self.hasLocalDocument = local
        self.readsKeys = readsKeys
        if let document { layout = Layout(document: document, width: width) }
    }

    /// Rows of the document area: the screen less the header and status lines.
    public var viewport: Int { max(1, height - 2) }
    public var maxTop: Int { max(0, (layout?.rowCount ?? 0) - viewport) }
    public var isDriving: Bool { you != nil && driver == you }
    /// Whether this view moves with the room's states: a follower that follows, or a
    /// presenter that does not drive and follows the driver (so that `t` takes over from
    /// where the room is, not from a stale place of its own).
    var tracksRoom: Bool { following && (role == .follower || !isDriving) }
    /// The local document differs from the room's.
    public var documentDiffers: Bool {
        guard hasLocalDocument, let roomDocument, let layout else { return false }
        return layout.document.fingerprint != roomDocument
    }
}

/// Presenters send at most one update per 1000/60 ms.
let minimumUpdateIntervalMs: Int64 = 16

/// Applies a message to the model (Elm's `update`).
public func update(_ model: inout ViewerModel, _ message: ViewerMessage) -> [ViewerCommand] {
    switch message {
    case .key(let key):
        return handle(key, &model)
    case .resize(let width, let height):
        let anchor = model.layout?.anchor(atRow: model.top)
        model.width = width
        model.height = height
        if let document = model.layout?.document {
            model.layout = Layout(document: document, width: width)
            model.search.match = nil  // its row is another one now
            if let anchor, let row = model.layout?.row(for: anchor) { model.top = row }
        }
        model.top = min(model.top, model.maxTop)
        // A follower re-maps the presenter's place, not its own view (which rounding moved).
        if model.tracksRoom, let state = model.lastState { follow(state, &model) }
        model.pendingUpdate = model.role == .presenter && model.isDriving
        return []
    case .playback(let text):
        model.playback = text
        return []
    case .documentEdited(let name, let format, let text):
        return reload(name: name, format: format, text: text, &model)
    case .documentUnreadable(let reason):
        model.notice = reason
        return []
    case .connection(let status):
        model.connection = status
        if status != .connected { model.roundTripMs = nil }
        if case .waiting(let delay, _) = status { model.retryAtMs = model.nowMs + Int64(delay * 1000) } else { model.retryAtMs = nil }
        return []
    case .roundTrip(let milliseconds):
        model.roundTripMs = milliseconds
        return []
    case .server(let event):
        return receive(event, &model)
    case .clock(let now):
        model.nowMs = now
        guard model.role == .presenter, model.pendingUpdate, model.isDriving, model.connection == .connected,
              now - model.lastSentMs >= minimumUpdateIntervalMs, let layout = model.layout else { return [] }
        model.pendingUpdate = false
        model.lastSentMs = now
        return [.send(.scroll(ScrollUpdate(
            offset: Double(model.top), viewport: Double(model.viewport), content: Double(layout.rowCount),
            anchor: layout.anchor(atRow: model.top), t: String(now))))]
    }
}

private func handle(_ key: Key, _ model: inout ViewerModel) -> [ViewerCommand] {
    if model.showingHelp {
        model.showingHelp = false  // any key hides the help, and does nothing else (Ctrl-C still quits)
        return key == .interrupt ? [.quit] : []
    }
    if model.search.isTyping { return typeSearch(key, &model) }
    model.search.message = nil
    let page = max(1, model.viewport - 1)
    var target: Int?
    switch key {
    case .interrupt, .character("q"): return [.quit]
    case .down, .character("j"): target = model.top + 1
    case .up, .character("k"): target = model.top - 1
    case .pageDown, .character(" "): target = model.top + page
    case .pageUp, .character("b"): target = model.top - page
    case .home, .character("g"): target = 0
    case .end, .character("G"): target = model.maxTop
    case .character("h"), .f1:
        model.showingHelp = true
        return []
    case .character("/"), .character("?"):
        openSearch(backward: key == .character("?"), &model)
        return []
    case .character("n"): target = model.layout?.headingRow(from: model.top, forward: true)
    case .character("N"): target = model.layout?.headingRow(from: model.top, forward: false)
    case .character("t") where model.role == .presenter:
        model.pendingUpdate = true  // the room hears this view's place as soon as it drives
        return [.send(.control(take: true))]
    case .character("f") where !model.following && (model.role == .follower || !model.isDriving):
        model.following = true
        if let state = model.lastState {
            model.direction = state.direction
            follow(state, &model)
        }
        return model.role == .follower ? [.send(.follow(true))] : []
    default: return []
    }
    guard let target else { return [] }
    return move(to: target, &model)
}

/// Moves the view's top to `target` (kept inside the document), as a presenter or follower
/// moves: driving, the room hears it; otherwise the view detaches from the room.
func move(to target: Int, _ model: inout ViewerModel) -> [ViewerCommand] {
    let clamped = min(max(0, target), model.maxTop)
    guard clamped != model.top else { return [] }
    model.direction = clamped > model.top ? .down : .up
    model.top = clamped
    switch model.role {
    case .presenter:
        // Driving: the room hears the move. Not driving: this view leaves the driver's place
        // (only here; `t` would take the room to it, `f` goes back to the driver).
        if model.isDriving { model.pendingUpdate = true } else { model.following = false }
        return []
    case .follower:
        guard model.following else { return [] }
        model.following = false
        return [.send(.follow(false))]
    }
}

private func receive(_ event: ServerEvent, _ model: inout ViewerModel) -> [ViewerCommand] {
    switch event {
    case .welcome(let welcome):
        model.you = welcome.you
        model.driver = welcome.driver
        model.driverName = welcome.driverName
        model.presence = welcome.presence
        model.roomDocument = welcome.doc
        model.notice = nil
        var commands = [ViewerCommand]()
        if model.role == .presenter, let shared = model.sharedText {
            commands.append(.send(.document(name: shared.name, format: shared.format, text: shared.text)))
            if let state = welcome.state {
                // A presenter joining a room that has a place (a restart, a second presenter)
                // starts there, mapped to its own layout, and sends nothing until it moves.
                model.lastState = state
                model.direction = state.direction
                follow(state, &model)
                model.pendingUpdate = false
            } else {
                model.pendingUpdate = true  // a new room starts at this view's place
            }
        }
        if model.role == .follower {
            if !model.following { commands.append(.send(.follow(false))) }
            if let state = welcome.state { apply(state, moved: false, &model) }
        }
        return commands
    case .state(let state):
        apply(state, moved: true, &model)
        return []
    case .driver(let id, let name):
        let wasDriving = model.isDriving
        model.driver = id
        model.driverName = name
        // A presenter whose control was taken follows the new driver from here.
        if model.role == .presenter, wasDriving, !model.isDriving { model.following = true }
        return []
    case .document(let document):
        model.roomDocument = document.fingerprint
        if model.role == .follower && !model.hasLocalDocument {
            model.layout = Layout(document: Document(text: document.text, format: document.format, name: document.name), width: model.width)
            model.search.match = nil
            if let state = model.lastState, model.following { follow(state, &model) }
        }
        return []
    case .presence(let presence):
        model.presence = presence
        return []
    case .error(let code, let message):
        model.notice = "\(code): \(message)"
        return []
    }
}

/// `moved`: the state is news (a `state` message), not the place a `welcome` found.
private func apply(_ state: ScrollState, moved: Bool, _ model: inout ViewerModel) {
    model.lastState = state
    model.direction = state.direction
    if moved, model.nowMs > 0 { model.movedAtMs = model.nowMs }
    if let doc = state.doc { model.roomDocument = doc }
    if model.tracksRoom { follow(state, &model) }
}

/// Moves a follower to the presenter's place (PROTOCOL.md §3, "Following a state").
func follow(_ state: ScrollState, _ model: inout ViewerModel) {
    guard let layout = model.layout else { return }
    model.top = followerTop(for: state, anchorRow: state.anchor.flatMap { layout.row(for: $0) }, maxTop: model.maxTop)
}

/// The follower's top row for a state (PROTOCOL.md §3: `ScrollState.top`).
func followerTop(for state: ScrollState, anchorRow: Int?, maxTop: Int) -> Int {
    state.top(anchorRow: anchorRow, maxTop: maxTop)
}
