import Documents
import ScrollModel
import TerminalUI
import TextSafety

/// Room-protocol messages, both ways.
extension FuzzTarget {
    /// decode → encode → decode is exact, and a scroll the server accepts makes a state the
    /// server would itself store and send (ScrollState.problem), after no state or another.
    static func roomMessage(_ data: [UInt8]) throws(FuzzFinding) {
        guard let message = decoded(data) else { return }
        let encoded = message.encoded
        try expect(decoded(encoded) == message, "decode → encode → decode changed the message: \(String(decoding: encoded, as: UTF8.self).prefix(120))")
        guard case .scroll(let update) = message else { return }
        for previous in [nil, earlierState] {
            let next = ScrollState.next(after: previous, applying: update, by: "0123456789abcdef", doc: nil)
            if let problem = next.problem() { throw FuzzFinding("an accepted scroll makes a state the store refuses: \(problem)") }
            let expected: Direction = previous.map { update.offset > $0.offset ? .down : update.offset < $0.offset ? .up : .none } ?? .none
            try expect(next.direction == expected, "direction \(next.direction) from \(previous?.offset ?? .nan) to \(update.offset)")
            try expect(next.seq == (previous?.seq ?? 0) + 1 && next.atTop == (update.offset <= 0), "seq or atTop")
        }
    }

    static let earlierState = ScrollState(seq: 41, offset: 500, viewport: 40, content: 2000, progress: 500 / 1960, direction: .down,
                                          anchor: Anchor(id: "intro", fraction: 0.5), atTop: false, atBottom: false, by: "fedcba9876543210", t: "1", doc: nil)

    static func decoded(_ bytes: [UInt8]) -> ClientMessage? { bytes.withUnsafeBytes { try? ClientMessage.decode($0) } }

    /// A server message decodes to what its own encoding decodes to, and a decoded state keeps
    /// the bounds clients rely on (finite numbers, fractions and progress in 0…1, seq ≥ 1).
    static func serverEvent(_ data: [UInt8]) throws(FuzzFinding) {
        guard let event = serverEventDecoded(data) else { return }
        if case .state(let state) = event { try checkBounds(state) }
        if case .welcome(let welcome) = event, let state = welcome.state { try checkBounds(state) }
        guard let encoded = encoded(event) else { return }
        let again = serverEventDecoded(encoded)
        try expect(again == normalized(event), "decode → encode → decode changed the message: \(String(decoding: encoded, as: UTF8.self).prefix(160))")
    }

    static func serverEventDecoded(_ bytes: [UInt8]) -> ServerEvent? { bytes.withUnsafeBytes { try? ServerEvent.decode($0) } }

    static func checkBounds(_ state: ScrollState) throws(FuzzFinding) {
        try expect(state.seq >= 1 && state.offset.isFinite, "seq \(state.seq), offset \(state.offset)")
        try expect([state.viewport, state.content].allSatisfy { $0?.isFinite ?? true }, "viewport or content not finite")
        try expect(state.progress.map { (0...1).contains($0) } ?? true, "progress \(state.progress!) outside 0…1")
        try expect(state.anchor.map { (0...1).contains($0.fraction) } ?? true, "anchor fraction \(state.anchor!.fraction) outside 0…1")
    }

    /// The server's own encoding of `event`; nil for an error code the server never sends.
    static func encoded(_ event: ServerEvent) -> [UInt8]? {
        switch event {
        case .state(let state): return ServerMessage.state(state)
        case .welcome(let w):
            var document: SharedDocument?
            if let doc = w.doc {
                document = SharedDocument(name: "", format: .text, text: "", by: "")
                document!.fingerprint = doc
            }
            return ServerMessage.welcome(room: w.room, you: w.you, role: w.role, state: w.state, driver: w.driver, driverName: w.driverName,
                                         presence: w.presence, document: document)
        case .driver(let driver, let name): return ServerMessage.driver(driver, name: name)
        case .document(let document): return ServerMessage.document(document)
        case .presence(let presence): return ServerMessage.presence(presence)
        case .error(let code, let message): return ErrorCode(rawValue: code).map { ServerMessage.error(ProtocolError($0, message)) }
        }
    }

    /// What survives the encoding: a welcome names its driver only when it has one.
    static func normalized(_ event: ServerEvent) -> ServerEvent {
        guard case .welcome(var welcome) = event, welcome.driver == nil else { return event }
        welcome.driverName = nil
        return .welcome(welcome)
    }
}

/// What a terminal follower makes of a server's messages.
extension FuzzTarget {
    /// Server messages, one per line, fed to a terminal follower (with a local document or
    /// showing the room's) at a size from the input's length: after each, its top is inside
    /// the document and the screen is its height in lines of exactly its width, with no
    /// control character but the renderer's own styles (`ESC [ … m`): nothing from the
    /// network moves the cursor, retitles the window or clears the screen.
    static func followerView(_ data: [UInt8]) throws(FuzzFinding) {
        let width = 8 + data.count % 73, height = 3 + data.count % 17
        var model = ViewerModel.follower(room: "fuzz", localDocument: data.count % 2 == 0 ? followerDocument : nil, width: width, height: height)
        for line in data.split(separator: UInt8(ascii: "\n")).prefix(32) {
            guard let event = serverEventDecoded(Array(line)) else { continue }
            _ = update(&model, .server(event))
            try expect((0...model.maxTop).contains(model.top), "top \(model.top) outside 0…\(model.maxTop)")
            let screen = view(model)
            try expect(screen.lines.count == height, "\(screen.lines.count) lines on a screen \(height) tall")
            for shown in screen.lines {
                let text = withoutStyles(shown)
                try expect(text.unicodeScalars.allSatisfy { SafeText.picture(for: $0) == nil }, "a control character reaches the terminal: \(text.debugDescription)")
                try expect(DisplayWidth.of(text) == width, "a line \(DisplayWidth.of(text)) columns wide on a screen \(width) wide: \(text.debugDescription)")
            }
        }
    }

    static let followerDocument = Document(text: "# Guide\n\nIntro text that wraps at narrow widths.\n\n## Install\n\n- one\n- two\n\n```\ncode\n```\n",
                                           format: .markdown, name: "guide.md")

    /// `line` without the SGR sequences (`ESC [ digits;… m`) the renderer writes.
    static func withoutStyles(_ line: String) -> String {
        var out = String.UnicodeScalarView()
        var scalars = line.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            if scalar == "\u{1B}", scalars.first == "[" {
                let rest = scalars.dropFirst()
                if let end = rest.firstIndex(where: { !("0"..."9").contains($0) && $0 != ";" }), rest[end] == "m" {
                    scalars = rest[rest.index(after: end)...]
                    continue
                }
            }
            out.append(scalar)
        }
        return String(out)
    }
}
