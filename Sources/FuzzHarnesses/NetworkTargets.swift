import HTTP1
import Deflate
import RedisClient
import WebSocketCore

/// Bytes from the network: request heads, frames both ways, deflate streams, Redis replies.
extension FuzzTarget {
    /// The head parses, or is refused with the same status and message, whole and in two
    /// reads; a complete head keeps the limits; a valid upgrade is answered 101 with the
    /// key's accept value.
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
        case (.failed(let one), .failed(let other)):
            try expect(one == other, "split at \(split): \(one.status) \(String(decoding: one.body, as: UTF8.self)) whole, "
                + "\(other.status) \(String(decoding: other.body, as: UTF8.self)) split")
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

    /// A server's connection after the handshake, with or without permessage-deflate (`receive`).
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

    /// A server's answer to `clientHandshake`: a refusal's message read within its bound,
    /// accepted only when §4.1 allows, then its frames as in `receive`, then each text message
    /// as in `serverEvent`.
    static func websocketClient(_ data: [UInt8]) throws(FuzzFinding) {
        guard let end = HTTPResponseHead.end(in: data), end <= 16 << 10 else { return }  // a client reads 16 KiB for a head
        guard let response = HTTPResponseHead.parse(Array(data[..<end])) else { return }
        try expect((0...999).contains(response.status), "status \(response.status) from three digits")
        let message = response.message(in: data[(end + 4)...])
        try expect(message.unicodeScalars.count <= 1024, "a refusal's message of \(message.unicodeScalars.count) scalars")
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

    /// Redis replies decode the same whole and split in two: the same replies, the same failure.
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
        // Each reply read as a Redis Cluster's map (`CLUSTER SLOTS`): one it takes names only
        // hosts and ports a node may connect to, and every slot's master is one of its masters.
        for item in whole.items {
            guard let map = try? RedisClusterMap(slotsReply: item.reply, askedHost: "127.0.0.1") else { continue }
            try expect(map.masters.count <= RedisClusterMap.maxNodes && map.replicas.count <= RedisClusterMap.maxNodes, "\(map.masters.count) masters")
            for node in map.masters + map.replicas {
                try expect((1...65_535).contains(node.port) && !node.host.isEmpty && node.host.utf8.count <= 255
                           && node.host.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }, "node \(node.host.prefix(40).debugDescription):\(node.port)")
            }
            for slot in 0..<RedisClusterMap.slotCount {
                guard let master = map.master(ofSlot: slot) else { continue }
                try expect(master < map.masters.count, "slot \(slot) names master \(master) of \(map.masters.count)")
            }
        }
    }
}
