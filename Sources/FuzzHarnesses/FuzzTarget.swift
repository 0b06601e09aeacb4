import Foundation
import Deflate
import RedisClient
import ScrollModel
import SyncClient
import SyncServer
import TerminalUI
import WebSocketCore

/// An input broke an invariant of the code under test (not only "it crashed").
public struct FuzzFinding: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One parser of bytes from someone else, with the invariants it must keep for any input.
/// The same checks run under libFuzzer (`Scripts/fuzz`) and, for every saved regression
/// input in `Fuzz/regressions/TARGET/`, in `swift test`.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// HTTP request head and WebSocket handshake validation.
    case http
    /// A server-side WebSocket connection fed the bytes after a handshake, split in two.
    case websocket
    /// The same with permessage-deflate agreed.
    case websocketDeflate = "websocket-deflate"
    /// The bounded inflater; and deflate → inflate round trips.
    case inflate
    /// Room-protocol messages from clients.
    case roomMessage = "room-message"
    /// Server messages as clients and the room store decode them; decode → encode round trips.
    case serverEvent = "server-event"
    /// A server's answer as a client reads it: the handshake response, then frames, then the
    /// server messages in them.
    case websocketClient = "websocket-client"
    /// A Markdown or text document → layout at a width from the input → anchor ↔ row.
    case markdown
    /// A stored room file (the store's checksummed format).
    case storeFile = "store-file"
    /// A configuration file and its validation.
    case configuration
    /// `scrollsync drive` scripts.
    case driveScript = "drive-script"
    /// Redis replies (RESP2/RESP3), whole and split.
    case resp
    /// `ws://` / `wss://` URLs: what parses prints back to itself.
    case websocketURL = "websocket-url"

    /// Runs the target on `data`; throws a finding when an invariant breaks.
    public func check(_ data: [UInt8]) throws(FuzzFinding) {
        switch self {
        case .http: try Self.http(data)
        case .websocket: try Self.websocket(data, deflate: false)
        case .websocketDeflate: try Self.websocket(data, deflate: true)
        case .inflate: try Self.inflate(data)
        case .roomMessage: try Self.roomMessage(data)
        case .serverEvent: try Self.serverEvent(data)
        case .websocketClient: try Self.websocketClient(data)
        case .markdown: try Self.markdown(data)
        case .storeFile: try Self.storeFile(data)
        case .configuration: try Self.configuration(data)
        case .driveScript: try Self.driveScript(data)
        case .resp: try Self.resp(data)
        case .websocketURL: try Self.websocketURL(data)
        }
    }

    /// Throws a finding that says `message` unless `condition` holds.
    public static func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFinding) {
        if !condition { throw FuzzFinding(message()) }
    }

    // MARK: Network

    /// The head parses the same whole and in two reads; a complete head keeps the limits; a
    /// valid upgrade is answered 101 with the key's accept value.
    static func http(_ data: [UInt8]) throws(FuzzFinding) {
        var parser = HTTPRequestParser()
        let whole = data.withUnsafeBytes { parser.parse($0) }
        let split = data.isEmpty ? 0 : Int(data[0]) % data.count
        var splitParser = HTTPRequestParser()
        var parts = Array(data[..<split]).withUnsafeBytes { splitParser.parse($0) }
        switch parts {
        case .needMore: parts = Array(data[split...]).withUnsafeBytes { splitParser.parse($0) }
        case .complete(let request, let remainder): parts = .complete(request, remainder: remainder + data[split...])
        case .failed: break
        }
        switch (whole, parts) {
        case (.needMore, .needMore), (.complete, .complete): try expect(whole == parts, "split at \(split), the head parsed differently")
        case (.failed(let one), .failed(let other)): try expect(one.status == other.status, "split at \(split): \(one.status) whole, \(other.status) split")
        default: throw FuzzFinding("split at \(split): \(whole) whole, \(parts) split")
        }
        guard case .complete(let request, let remainder) = whole else { return }
        try expect(remainder.count < data.count && data.suffix(remainder.count).elementsEqual(remainder),
                   "the bytes after the head (\(remainder.count)) are not the input's tail")
        try expect(data.count - remainder.count <= parser.maxHeadBytes, "a head of \(data.count - remainder.count) bytes accepted")
        try expect(request.fields.count <= parser.maxHeaderCount, "\(request.fields.count) header fields accepted")
        if case .success(let upgrade) = ServerHandshake.validate(request) {
            let response = ServerHandshake.response(for: upgrade, subprotocol: nil, extensions: nil)
            try expect(response.status == 101 && response.value("Sec-WebSocket-Accept") == ServerHandshake.acceptValue(for: upgrade.key),
                       "an upgrade answered \(response.status) without its accept value")
        }
    }

    static let frameLimits = WebSocketConnection.Limits(maxFrameSize: 1 << 16, maxMessageSize: 1 << 17)

    static func websocket(_ data: [UInt8], deflate: Bool) throws(FuzzFinding) {
        let agreed = deflate ? PerMessageDeflate.negotiate(offers: ExtensionOffer.parse(["permessage-deflate"]) ?? [])?.0 : nil
        let split = data.isEmpty ? 0 : Int(data[0]) % max(1, data.count)
        try receive(data[...], splitAt: split) { WebSocketConnection(role: .server, limits: frameLimits, deflate: agreed) }
    }

    /// What a connection made of a stream: its events, and what it answered.
    struct Heard: Equatable {
        enum Event: Equatable {
            case text([UInt8]), binary([UInt8]), ping([UInt8]), pong([UInt8])
            case closed(code: UInt16, reason: String)
            case failed(WebSocketError)
        }
        var events = [Event]()
        var answered = [UInt8]()
    }

    /// Feeds `data` to a fresh connection whole and to another in two reads split at `split`:
    /// both must hear the same messages and answer the same bytes, and every message keeps the
    /// limits. Returns the text messages.
    @discardableResult
    static func receive(_ data: ArraySlice<UInt8>, splitAt split: Int, connection: () -> WebSocketConnection) throws(FuzzFinding) -> [[UInt8]] {
        let split = data.startIndex + split
        let whole = heard([data], by: connection())
        let parts = heard([data[..<split], data[split...]], by: connection())
        try expect(whole.events == parts.events, "split at \(split - data.startIndex), the connection heard \(parts.events.count) events, whole \(whole.events.count)")
        try expect(whole.answered == parts.answered, "split at \(split - data.startIndex), the connection answered other bytes")
        var texts = [[UInt8]]()
        for event in whole.events {
            switch event {
            case .text(let text):
                try expect(UTF8Validator.isValid(text), "a text message that is not UTF-8")
                try expect(text.count <= frameLimits.maxMessageSize, "a text message of \(text.count) bytes over the limit")
                texts.append(text)
            case .binary(let bytes):
                try expect(bytes.count <= frameLimits.maxMessageSize, "a binary message of \(bytes.count) bytes over the limit")
            case .ping(let bytes), .pong(let bytes):
                try expect(bytes.count <= 125, "a control frame of \(bytes.count) bytes")
            case .closed, .failed:
                break
            }
        }
        return texts
    }

    static func heard(_ reads: [ArraySlice<UInt8>], by connection: WebSocketConnection) -> Heard {
        var heard = Heard()
        var stopped = false
        for read in reads where !stopped {
            var bytes = Array(read)
            bytes.withUnsafeMutableBytes { buffer in
                connection.receive(buffer) { event in
                    switch event {
                    case .text(let text): heard.events.append(.text(Array(text)))
                    case .binary(let bytes): heard.events.append(.binary(Array(bytes)))
                    case .ping(let bytes): heard.events.append(.ping(Array(bytes)))
                    case .pong(let bytes): heard.events.append(.pong(Array(bytes)))
                    case .closed(let code, let reason):
                        heard.events.append(.closed(code: code.rawValue, reason: reason))
                        stopped = true
                    case .failed(let error):
                        heard.events.append(.failed(error))
                        stopped = true
                    }
                }
            }
        }
        connection.drainOutbound { heard.answered += $0.array }
        return heard
    }

    /// What `websocket-client` offers: RFC 6455's sample key (its accept value is
    /// `s3pPLMBiTxaQ9kYGzzhZRbK+xOo=`), the room subprotocol and permessage-deflate.
    static let clientHandshake = ClientHandshake(
        host: "fuzz.example", target: "/rooms/fuzz", protocols: ["scrollsync.v1"], deflate: PerMessageDeflate(), key: "dGhlIHNhbXBsZSBub25jZQ==")

    static func websocketClient(_ data: [UInt8]) throws(FuzzFinding) {
        guard let end = headEnd(data) else { return }
        guard let response = HTTPResponseHead.parse(Array(data[..<end])) else { return }
        try expect((0...999).contains(response.status), "status \(response.status) from three digits")
        guard case .success(let agreement) = clientHandshake.validate(response) else { return }
        try expect(response.status == 101, "a handshake accepted with status \(response.status)")
        try expect(agreement.subprotocol == nil || agreement.subprotocol == "scrollsync.v1", "an unoffered subprotocol accepted")
        let rest = data[(end + 4)...]
        let split = rest.isEmpty ? 0 : Int(rest[rest.startIndex]) % rest.count
        // One masking key for both, so that their answers can be compared.
        let texts = try receive(rest, splitAt: split) {
            WebSocketConnection(role: .client, limits: frameLimits, deflate: agreement.deflate, maskingKeys: { 0x3A5F_0C21 })
        }
        for text in texts { try serverEvent(text) }
    }

    /// Where the first CRLF CRLF starts, within the 16 KiB a client reads for a head.
    static func headEnd(_ data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for i in 0...min(data.count - 4, 16 << 10) where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// The limit holds, input split in two inflates to the same bytes and error as whole, and
    /// deflate → inflate is exact.
    static func inflate(_ data: [UInt8]) throws(FuzzFinding) {
        let limit = 1 << 16
        let bounded = inflated(data, limit: limit)
        try expect(bounded.bytes.count <= limit, "inflated \(bounded.bytes.count) bytes past the limit of \(limit)")
        let split = data.isEmpty ? 0 : Int(data[0]) % data.count
        let parts = inflated([data[..<split], data[split...]], limit: limit)
        try expect(parts.bytes == bounded.bytes && parts.error == bounded.error,
                   "split at \(split): \(parts.bytes.count) bytes, \(String(describing: parts.error)); whole \(bounded.bytes.count), \(String(describing: bounded.error))")
        var compressed = [UInt8]()
        data.withUnsafeBytes { Deflater().compress($0, into: &compressed) }
        let back = inflated(compressed, limit: data.count + 1)
        if let error = back.error { throw FuzzFinding("deflate → inflate failed: \(error)") }
        try expect(back.bytes == data, "deflate → inflate changed \(data.count) bytes")
    }

    /// `input` inflated as one whole message, and the error that stopped it, if any.
    static func inflated(_ input: [UInt8], limit: Int) -> (bytes: [UInt8], error: InflateError?) {
        inflated([input[...]], limit: limit)
    }

    /// One message that arrives in `pieces`, inflated piece by piece.
    static func inflated(_ pieces: [ArraySlice<UInt8>], limit: Int) -> (bytes: [UInt8], error: InflateError?) {
        var output = [UInt8]()
        let inflater = Inflater()
        var failure: InflateError?
        for (index, piece) in pieces.enumerated() where failure == nil {
            piece.withUnsafeBytes { buffer in
                do {
                    try inflater.inflate(buffer, final: index == pieces.count - 1, into: &output, limit: limit)
                } catch {
                    failure = error as? InflateError ?? .corrupt("\(error)")
                }
            }
        }
        return (output, failure)
    }

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

    static func decoded(_ bytes: [UInt8]) -> ClientMessage? {
        bytes.withUnsafeBytes { buffer in
            do {
                return try ClientMessage.decode(buffer)
            } catch {
                return nil
            }
        }
    }

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

    static func serverEventDecoded(_ bytes: [UInt8]) -> ServerEvent? {
        bytes.withUnsafeBytes { buffer in
            do {
                return try ServerEvent.decode(buffer)
            } catch {
                return nil
            }
        }
    }

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

    // MARK: Documents and files

    static func markdown(_ data: [UInt8]) throws(FuzzFinding) {
        guard data.count >= 2 else { return }
        let width = 10 + Int(data[0]) % 190
        let format: SharedDocument.Format = data[1] & 1 == 0 ? .markdown : .text
        let document = Document(text: String(decoding: data[2...], as: UTF8.self), format: format, name: "fuzz")
        try expect(Set(document.blocks.map(\.id)).count == document.blocks.count, "repeated block ids: \(document.blocks.map(\.id))")
        let layout = Layout(document: document, width: width)
        for (index, row) in layout.rows.enumerated() {
            let columns = row.text.unicodeScalars.reduce(0) { $0 + DisplayWidth.of($1) }
            try expect(columns <= layout.width, "row \(index) is \(columns) columns at width \(layout.width)")
            guard let anchor = layout.anchor(atRow: index) else { throw FuzzFinding("no anchor at row \(index)") }
            let back = layout.row(for: anchor)
            try expect(back.map { layout.rows[$0].block } == row.block, "row \(index) → \(anchor) → row \(back.map(String.init) ?? "nil")")
        }
    }

    static func storeFile(_ data: [UInt8]) throws(FuzzFinding) {
        _ = StoreFile.decode(data)
        let keyed = data.first.map { $0 & 1 == 1 } ?? false
        let again = StoreFile.decode(StoreFile.encode(data, keyed: keyed, ceiling: data.count))
        guard case .success(let contents) = again else { throw FuzzFinding("an encoded file does not decode: \(again)") }
        try expect(contents.payload == data && contents.keyed == keyed && contents.ceiling == data.count, "encode → decode changed the file")
    }

    static func configuration(_ data: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: data, as: UTF8.self)
        var configuration = ServerConfiguration()
        do {
            let values = try Settings.fileValues(text, source: "fuzz")
            try Settings.apply(values, to: &configuration, source: "fuzz")
            try Settings.validate(configuration)
        } catch {
            try expect(!error.message.isEmpty, "a configuration error without a message")
            return
        }
        _ = Settings.describe(configuration)
    }

    /// A script parses to commands within the bounds `drive` relies on (finite offsets ≥ 0,
    /// fractions 0…1, durations up to a day, rates up to 1 kHz, so a sweep's step count fits an
    /// Int), on increasing lines of the input; an error names a line of the input.
    static func driveScript(_ data: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: data, as: UTF8.self)
        let lineCount = DriveScript.lines(of: text).count
        // The same script with CRLF line ends parses the same (or fails on the same line).
        if !data.contains(13) {
            let crlf = text.replacingOccurrences(of: "\n", with: "\r\n")
            try expect(Result { () throws(DriveScript.ParseError) in try DriveScript(text) } == Result { () throws(DriveScript.ParseError) in try DriveScript(crlf) },
                       "the script parses differently with CRLF line ends")
        }
        let script: DriveScript
        do {
            script = try DriveScript(text)
        } catch {
            try expect((1...lineCount).contains(error.line) && !error.message.isEmpty, "an error on line \(error.line) of \(lineCount)")
            return
        }
        try expect(zip(script.lines, script.lines.dropFirst()).allSatisfy { $0.number < $1.number }
                   && script.lines.allSatisfy { (1...lineCount).contains($0.number) }, "line numbers out of order or range")
        for line in script.lines {
            switch line.command {
            case .scroll(let offset): try expect(offset.isFinite && offset >= 0, "scroll \(offset)")
            case .by(let delta): try expect(delta.isFinite, "by \(delta)")
            case .goto(_, let fraction): try expect((0...1).contains(fraction), "goto fraction \(fraction)")
            case .sweep(let from, let to, let seconds, let hz):
                try expect([from, to].allSatisfy { $0.isFinite && $0 >= 0 }, "sweep from \(from) to \(to)")
                try expect((0...DriveScript.longestDuration).contains(seconds) && hz > 0 && hz <= 1000, "sweep over \(seconds) s at \(hz) Hz")
            case .sleep(let seconds): try expect((0...DriveScript.longestDuration).contains(seconds), "sleep \(seconds) s")
            case .expectFollowers(_, let bound): try expect(bound >= 0, "expect followers \(bound)")
            case .share(let path): try expect(!path.isEmpty, "share with no path")
            case .take, .release: break
            }
        }
    }

    static func resp(_ data: [UInt8]) throws(FuzzFinding) {
        func replies(_ chunks: [ArraySlice<UInt8>]) -> (items: [RESPDecoder.Item], failed: Bool) {
            var decoder = RESPDecoder()
            var items = [RESPDecoder.Item]()
            for chunk in chunks {
                decoder.append(Array(chunk))
                do {
                    while let item = try decoder.next() { items.append(item) }
                } catch {
                    return (items, true)
                }
            }
            return (items, false)
        }
        let whole = replies([data[...]])
        let split = data.isEmpty ? 0 : Int(data[0]) % data.count
        let parts = replies([data[..<split], data[split...]])
        try expect(parts.items == whole.items && parts.failed == whole.failed, "split at \(split), the replies differ")
    }

    static func websocketURL(_ data: [UInt8]) throws(FuzzFinding) {
        guard let url = WebSocketURL(String(decoding: data, as: UTF8.self)) else { return }
        let again = WebSocketURL(url.description)
        try expect(again == url, "\(url.description) does not parse back to itself")
    }
}
