import Bytes
import Deflate

/// One WebSocket connection after the handshake, without I/O (RFC 6455 §5–7, RFC 7692).
///
/// Feed received bytes to `receive(_:_:)`; it reports messages and close events and
/// queues the frames the protocol owes the peer (pongs, close replies). `send…` queue
/// frames too. The caller moves `outbound` frames to the socket and closes the socket
/// when `state` becomes `.closed`. Protocol errors never throw: they queue a close frame
/// with the right code and report `.failed`.
public final class WebSocketConnection {
    public enum Role: Sendable { case server, client }

    // Stored large to small (the decoder's 4-byte tail next to the limit), as one of these
    // exists per connection. A connection is used from one thread, and no field is being
    // changed while an event handler runs (handlers may call back in), so the fields skip
    // Swift's run-time exclusivity check, which cost several checks per message received.
    @exclusivity(unchecked) private var decoder: FrameDecoder
    private let messageLimit: UInt32
    /// Compression, and a test's own masking keys: in a box only connections that have
    /// either allocate (an idle server connection is 104 bytes, a 112-byte malloc chunk).
    private let rare: Rare?
    @exclusivity(unchecked) private var outbound: [SharedBytes] = []
    @exclusivity(unchecked) private var storedPieces: Pieces?
    public let role: Role
    /// Where the connection is in its life (other modules read it on every send).
    public var state: State { currentState }
    /// `state`'s storage, without a run-time exclusivity check (behind a getter: where another
    /// module reads a stored property, the compiler puts the check back).
    @exclusivity(unchecked) @usableFromInline private(set) var currentState: State = .open
    @exclusivity(unchecked) private var messageOpcode: Opcode?
    @exclusivity(unchecked) private var messageCompressed = false
    @exclusivity(unchecked) private var deliveredInPlace = false
    @exclusivity(unchecked) private var utf8 = UTF8Validator()

    /// What the peer may send (each limit at most 4 GiB).
    public var limits: Limits { Limits(maxFrameSize: decoder.maxFrameSize, maxMessageSize: Int(messageLimit)) }
    /// The agreed permessage-deflate parameters, if any.
    public var deflate: PerMessageDeflate? { compression?.parameters }
    /// Messages at least this long are compressed when permessage-deflate is on.
    public var compressionThreshold: Int { compression?.threshold ?? 64 }
    private var compression: Compression? { rare?.compression }
    private var deflater: Deflater? { compression?.deflater }
    private var inflater: Inflater? { compression?.inflater }
    private func pieces(_ budget: MessageBudget?) -> Pieces {
        if let storedPieces { return storedPieces }
        let made = Pieces(budget: budget)
        storedPieces = made
        return made
    }
    /// The part of the current message buffered so far.
    private var bufferedCount: Int { storedPieces?.message.count ?? 0 }

    /// - Parameters:
    ///   - compressionThreshold: 64 bytes: below that, deflate rarely saves anything.
    ///   - sharedDeflater: a compressor to use instead of one of the connection's own when
    ///     the server's compressor keeps no context between messages (server role,
    ///     `server_no_context_takeover`, 15-bit window): then every message is compressed
    ///     from a clean state and one compressor can serve every connection on a loop.
    ///     It must reset after every message and be used from one thread only.
    ///   - maskingKeys: where a client's masking keys come from (RFC 6455 §5.3: unpredictable,
    ///     so the system's random bytes by default); a test may make them deterministic.
    public init(role: Role, limits: Limits = .init(), deflate: PerMessageDeflate? = nil, compressionThreshold: Int = 64,
                sharedDeflater: Deflater? = nil, maskingKeys: (() -> UInt32)? = nil) {
        self.role = role
        messageLimit = UInt32(clamping: limits.maxMessageSize)
        decoder = FrameDecoder(maxFrameSize: limits.maxFrameSize, expectMasked: role == .server)
        if let deflate {
            let shared = sharedDeflater.flatMap {
                role == .server && deflate.serverNoContextTakeover && (deflate.serverMaxWindowBits ?? 15) == 15 ? $0 : nil
            }
            let codecs = deflate.codecs(isServer: role == .server, ownDeflater: shared == nil)
            let compression = Compression(parameters: deflate, threshold: compressionThreshold, deflater: shared ?? codecs.deflater,
                                          inflater: codecs.inflater)
            rare = Rare(compression: compression, maskingKeys: maskingKeys)
        } else {
            rare = maskingKeys.map { Rare(compression: Compression?.none, maskingKeys: $0) }
        }
    }

    // MARK: Receiving

    /// Decodes `bytes` (unmasking them in place) and reports what they carry.
    /// - Parameter budget: what unfinished messages may hold across the process; a message
    ///   that would take more fails the connection with 1013 (`overloaded`).
    public func receive(_ bytes: UnsafeMutableRawBufferPointer, budget: MessageBudget? = nil, _ onEvent: (Event) -> Void) {
        var position = 0
        while state != .closed {
            do {
                guard let event = try decoder.next(bytes, position: &position) else { return }
                switch event {
                case .header(let header): try begin(header)
                case .payload(let chunk): try payload(UnsafeRawBufferPointer(chunk), budget: budget, onEvent)
                case .end(let header): try end(header, onEvent)
                }
            } catch {
                fail(error, onEvent)
            }
        }
    }

    /// Whether a data message has begun and not ended.
    public var hasUnfinishedMessage: Bool { messageOpcode != nil }

    /// Call once a second (the transport's tick). A message still unfinished after
    /// `deadlineSeconds` ticks fails the connection with 1008 (`unfinished`), so that a peer
    /// that starts a message and never ends it cannot hold its buffer for as long as it
    /// answers pings.
    public func tick(deadlineSeconds: Int, _ onEvent: (Event) -> Void) {
        guard state == .open, messageOpcode != nil, let storedPieces else { return }
        storedPieces.unfinishedTicks &+= 1
        if Int(storedPieces.unfinishedTicks) > deadlineSeconds { fail(.unfinished(seconds: deadlineSeconds), onEvent) }
    }

    private func begin(_ header: FrameHeader) throws(WebSocketError) {
        deliveredInPlace = false
        guard !header.rsv2 && !header.rsv3 else { throw .protocolViolation("reserved bits RSV2/RSV3 set") }
        if header.opcode.isControl {
            guard !header.rsv1 else { throw .protocolViolation("RSV1 set on a control frame") }
            storedPieces?.control.removeAll(keepingCapacity: true)
            return
        }
        if header.opcode == .continuation {
            guard messageOpcode != nil else { throw .protocolViolation("continuation frame without a message") }
            guard !header.rsv1 else { throw .protocolViolation("RSV1 set on a continuation frame") }
        } else {
            guard messageOpcode == nil else { throw .protocolViolation("new message before the previous one ended") }
            guard !header.rsv1 || inflater != nil else { throw .protocolViolation("RSV1 set without permessage-deflate") }
            messageOpcode = header.opcode
            messageCompressed = header.rsv1
            if let storedPieces {
                storedPieces.unfinishedTicks = 0
                if storedPieces.message.capacity > 64 << 10 {
                    storedPieces.dropMessage()
                } else {
                    storedPieces.message.removeAll(keepingCapacity: true)
                }
            }
            utf8 = UTF8Validator()
        }
        if !messageCompressed && UInt64(bufferedCount) + header.payloadLength > UInt64(messageLimit) {
            throw .tooLarge(limit: Int(messageLimit))
        }
    }

    private func payload(_ chunk: UnsafeRawBufferPointer, budget: MessageBudget?, _ onEvent: (Event) -> Void) throws(WebSocketError) {
        guard let header = decoder.header else { return }
        if header.opcode.isControl {
            if UInt64(chunk.count) == header.payloadLength {
                // The whole frame is in this chunk: act on it in place.
                deliveredInPlace = true
                try handleControl(header.opcode, chunk, onEvent)
            } else {
                pieces(budget).control.append(contentsOf: chunk)  // at most 125 bytes
            }
            return
        }
        guard state == .open, let opcode = messageOpcode else { return }  // closing: data is dropped
        let isText = opcode == .text
        if messageCompressed {
            let pieces = pieces(budget)
            let before = pieces.message.count
            // No more output than the budget has left (beyond what this buffer holds already).
            let limit = min(Int(messageLimit), budget.map { pieces.accounted + $0.available } ?? .max)
            // Text is checked before any other failure: bytes fail the same way however they
            // were split into reads (what an earlier read inflated was checked at once).
            var failure: InflateError?
            do {
                try inflater!.inflate(chunk, final: false, into: &pieces.message, limit: limit)
            } catch {
                failure = error
            }
            try validateText(isText, pieces.message, from: before)
            if case .tooLarge? = failure, limit < Int(messageLimit) { throw .overloaded }
            if let failure { throw Self.map(failure) }
            guard pieces.account() else { throw .overloaded }
        } else if header.fin && header.opcode != .continuation && UInt64(chunk.count) == header.payloadLength {
            // The whole message is in this chunk: deliver it in place, without a copy.
            if isText { guard utf8.feed(chunk) && utf8.isComplete else { throw .invalidUTF8 } }
            deliveredInPlace = true
            messageOpcode = nil
            onEvent(isText ? .text(chunk) : .binary(chunk))
        } else {
            if isText { guard utf8.feed(chunk) else { throw .invalidUTF8 } }
            let pieces = pieces(budget)
            pieces.message.append(contentsOf: chunk)
            guard pieces.account() else { throw .overloaded }
        }
    }

    private func end(_ header: FrameHeader, _ onEvent: (Event) -> Void) throws(WebSocketError) {
        if header.opcode.isControl {
            guard !deliveredInPlace else { return }
            guard let storedPieces else {
                return try handleControl(header.opcode, UnsafeRawBufferPointer(start: nil, count: 0), onEvent)
            }
            var failure: WebSocketError?
            storedPieces.control.withUnsafeBytes { payload in
                do throws(WebSocketError) { try handleControl(header.opcode, payload, onEvent) } catch { failure = error }
            }
            if let failure { throw failure }
            return
        }
        guard header.fin, !deliveredInPlace, state == .open, let opcode = messageOpcode else {
            if header.fin { messageOpcode = nil }
            return
        }
        messageOpcode = nil
        if messageCompressed {
            let pieces = self.pieces(nil)
            let before = pieces.message.count
            var failure: InflateError?
            do {
                try [UInt8]().withUnsafeBytes { try inflater!.inflate($0, final: true, into: &pieces.message, limit: Int(messageLimit)) }
            } catch let error as InflateError {
                failure = error
            } catch {
                failure = .corrupt("\(error)")
            }
            try validateText(opcode == .text, pieces.message, from: before)
            if let failure { throw Self.map(failure) }
        }
        if opcode == .text { guard utf8.isComplete else { throw .invalidUTF8 } }
        // Nothing buffered: an empty message, which needs no box.
        let payload = storedPieces?.message ?? []
        payload.withUnsafeBytes { onEvent(opcode == .text ? .text($0) : .binary($0)) }
        // A large buffer goes back at once, not when the next message begins.
        if let storedPieces, storedPieces.message.capacity > 64 << 10 { storedPieces.dropMessage() }
    }

    private func validateText(_ isText: Bool, _ message: [UInt8], from start: Int) throws(WebSocketError) {
        guard isText, message.count > start else { return }
        let ok = message.withUnsafeBytes { utf8.feed(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        guard ok else { throw .invalidUTF8 }
    }

    private static func map(_ error: InflateError) -> WebSocketError {
        switch error {
        case .tooLarge(let limit): .tooLarge(limit: limit)
        case .corrupt(let what): .badCompression(what)
        }
    }

    private func handleControl(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer, _ onEvent: (Event) -> Void) throws(WebSocketError) {
        switch opcode {
        case .ping:
            if state == .open { outbound.append(FrameEncoder.frame(opcode: .pong, payload: payload, maskKey: maskKey())) }
            onEvent(.ping(payload))
        case .pong:
            onEvent(.pong(payload))
        case .close:
            let (code, reason) = try Self.parseClose(payload)
            if state == .open {
                enqueue(.close, FrameEncoder.closePayload(code: code, reason: ""))
            }
            currentState = .closed
            onEvent(.closed(code: code ?? .noStatus, reason: reason))
        default:
            break
        }
    }

    /// Validates a close payload (§5.5.1, §7.4): empty, or a code allowed on the wire
    /// followed by a UTF-8 reason.
    static func parseClose(_ payload: UnsafeRawBufferPointer) throws(WebSocketError) -> (CloseCode?, String) {
        guard !payload.isEmpty else { return (nil, "") }
        guard payload.count >= 2 else { throw .protocolViolation("close payload of one byte") }
        let code = CloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isAllowedOnWire else { throw .protocolViolation("invalid close code \(code.rawValue)") }
        let reason = Array(payload[2...])
        guard UTF8Validator.isValid(reason) else { throw .invalidUTF8 }
        return (code, String(decoding: reason, as: UTF8.self))
    }

    private func fail(_ error: WebSocketError, _ onEvent: (Event) -> Void) {
        if state == .open {
            enqueue(.close, FrameEncoder.closePayload(code: error.closeCode, reason: error.reason))
        }
        currentState = .closed
        storedPieces?.dropMessage()
        inflater?.reset()
        onEvent(.failed(error))
    }

    // MARK: Sending

    /// Whether data frames may still be sent.
    /// Inlined where it is read (a broadcast reads it per receiver): a load, not a call.
    @inlinable public var isOpen: Bool { currentState == .open }

    /// Queues a text message (the caller vouches it is UTF-8). False once closing.
    @discardableResult
    public func send(text: UnsafeRawBufferPointer) -> Bool { sendMessage(.text, text) }

    /// Queues a binary message. False once closing.
    @discardableResult
    public func send(binary: UnsafeRawBufferPointer) -> Bool { sendMessage(.binary, binary) }

    @discardableResult
    public func send(text: String) -> Bool {
        var text = text
        return text.withUTF8 { send(text: UnsafeRawBufferPointer($0)) }
    }

    /// Queues a ping (payload at most 125 bytes).
    public func sendPing(_ payload: [UInt8] = []) {
        guard state == .open else { return }
        enqueue(.ping, Array(payload.prefix(125)))
    }

    /// Starts the close handshake (§7.1.2); the peer's reply ends it.
    public func close(code: CloseCode = .normal, reason: String = "") {
        guard state == .open else { return }
        enqueue(.close, FrameEncoder.closePayload(code: code, reason: reason))
        currentState = .closing
    }

    /// Marks the connection closed without a handshake (the transport dropped it), and
    /// frees what an unfinished message held.
    public func abandon() {
        currentState = .closed
        storedPieces?.dropMessage()
    }

    /// Hands every queued frame to `body`, oldest first, and empties the queue.
    public func drainOutbound(_ body: (SharedBytes) -> Void) {
        guard !outbound.isEmpty else { return }
        for frame in outbound { body(frame) }
        outbound.removeAll()  // an idle connection keeps no storage; every frame here is an allocation anyway
    }

    public var hasOutbound: Bool { !outbound.isEmpty }

    /// The bytes of every queued frame.
    public var outboundByteCount: Int { outbound.reduce(0) { $0 + $1.count } }

    /// Appends a text message's frame to `bytes` instead of queuing it, when it would go
    /// uncompressed and nothing is queued before it (a server's first messages, written
    /// after its 101 answer in one buffer), and returns the frame's length; nil, with
    /// `bytes` unchanged, when it must be sent with `send` (or the connection is closing).
    public func appendFrame(text payload: UnsafeRawBufferPointer, to bytes: inout [UInt8]) -> Int? {
        guard state == .open, role == .server, outbound.isEmpty, deflating(payload.count) == nil else { return nil }
        let headerLength = FrameEncoder.headerLength(payloadLength: payload.count, masked: false)
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: headerLength))
        _ = bytes.withUnsafeMutableBytes { FrameEncoder.writeHeader(into: UnsafeMutableRawBufferPointer(rebasing: $0[start...]), opcode: .text, payloadLength: payload.count) }
        bytes.append(contentsOf: payload)
        return headerLength + payload.count
    }

    /// The compression and compressor for a message of `count` bytes, nil when it goes
    /// uncompressed (none agreed, or below the threshold).
    private func deflating(_ count: Int) -> (Compression, Deflater)? {
        guard let compression, let deflater = compression.deflater, count >= compression.threshold else { return nil }
        return (compression, deflater)
    }

    private func sendMessage(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer) -> Bool {
        guard state == .open else { return false }
        if let (compression, deflater) = deflating(payload.count) {
            compression.compressed.removeAll(keepingCapacity: true)
            deflater.compress(payload, into: &compression.compressed)
            outbound.append(compression.compressed.withUnsafeBytes { FrameEncoder.frame(rsv1: true, opcode: opcode, payload: $0, maskKey: maskKey()) })
            if compression.compressed.capacity > 64 << 10 { compression.compressed = [] }
        } else {
            outbound.append(FrameEncoder.frame(opcode: opcode, payload: payload, maskKey: maskKey()))
        }
        return true
    }

    private func enqueue(_ opcode: Opcode, _ payload: [UInt8]) {
        outbound.append(FrameEncoder.frame(opcode: opcode, payload: payload, maskKey: maskKey()))
    }

    private func maskKey() -> UInt32? {
        role == .client ? rare?.maskingKeys?() ?? Entropy.uint32() : nil
    }
}
