/// Redis's wire protocol, RESP2 and RESP3, without I/O: commands out as bytes, bytes in as
/// replies (as the WebSocket codec does for frames).
public enum RESP {
    /// A command as RESP: an array of bulk strings.
    public static func encode(_ arguments: [[UInt8]]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(16 + arguments.reduce(0) { $0 + $1.count + 16 })
        out += Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            out += Array("$\(argument.count)\r\n".utf8)
            out += argument
            out += [13, 10]
        }
        return out
    }
}

/// Reads replies from a byte stream. Feed it what the socket gave; take replies while
/// `next()` returns them. Malformed input is an error; the connection is then unusable.
public struct RESPDecoder {
    /// The largest bulk string accepted (Redis's own `proto-max-bulk-len` default).
    public static let maxBulkLength = 512 << 20
    /// The largest aggregate (array, map, set) accepted, in elements.
    public static let maxElements = 1 << 24
    /// Aggregates nest at most this deep.
    public static let maxDepth = 32

    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// A reply and whether it was a push (RESP3 out-of-band data, e.g. a pub/sub message).
    public struct Item: Equatable, Sendable {
        public var reply: RedisReply
        public var isPush: Bool
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65_536 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete reply, or nil until more bytes arrive.
    public mutating func next() throws(RedisError) -> Item? {
        var index = start
        guard let parsed = try parse(&index, depth: 0) else { return nil }
        start = index
        return parsed
    }

    private func line(_ index: inout Int) throws(RedisError) -> ArraySlice<UInt8>? {
        var scan = index
        while scan + 1 < buffer.count {
            if buffer[scan] == 13 {
                guard buffer[scan + 1] == 10 else { throw RedisError("RESP: a CR not followed by LF") }
                let text = buffer[index..<scan]
                index = scan + 2
                return text
            }
            scan += 1
        }
        guard scan - index < 65_536 else { throw RedisError("RESP: a header line over 64 KiB") }
        return nil
    }

    private func integer(_ text: ArraySlice<UInt8>) throws(RedisError) -> Int {
        guard let value = Int(String(decoding: text, as: UTF8.self)) else {
            throw RedisError("RESP: not an integer: \(String(decoding: text.prefix(32), as: UTF8.self).debugDescription)")
        }
        return value
    }

    private func parse(_ index: inout Int, depth: Int) throws(RedisError) -> Item? {
        guard depth <= Self.maxDepth else { throw RedisError("RESP: replies nested over \(Self.maxDepth) deep") }
        guard index < buffer.count else { return nil }
        let type = buffer[index]
        var cursor = index + 1
        guard let header = try line(&cursor) else { return nil }
        let text = { String(decoding: header, as: UTF8.self) }
        var reply: RedisReply
        var isPush = false
        switch type {
        case UInt8(ascii: "+"): reply = .status(text())
        case UInt8(ascii: "-"): reply = .error(text())
        case UInt8(ascii: ":"): reply = .integer(try integer(header))
        case UInt8(ascii: "_"): reply = .null
        case UInt8(ascii: ","), UInt8(ascii: "("): reply = .string(Array(header))  // double, big number: as text
        case UInt8(ascii: "#"):
            guard header.count == 1, header.first == UInt8(ascii: "t") || header.first == UInt8(ascii: "f") else { throw RedisError("RESP: a boolean is t or f") }
            reply = .integer(header.first == UInt8(ascii: "t") ? 1 : 0)
        case UInt8(ascii: "$"), UInt8(ascii: "="), UInt8(ascii: "!"):
            let length = try integer(header)
            if length == -1 && type == UInt8(ascii: "$") {
                reply = .null
                break
            }
            guard (0...Self.maxBulkLength).contains(length) else { throw RedisError("RESP: a bulk length of \(length)") }
            guard buffer.count - cursor >= length + 2 else { return nil }
            guard buffer[cursor + length] == 13, buffer[cursor + length + 1] == 10 else { throw RedisError("RESP: a bulk string not ended by CRLF") }
            var body = Array(buffer[cursor..<(cursor + length)])
            cursor += length + 2
            if type == UInt8(ascii: "!") {
                reply = .error(String(decoding: body, as: UTF8.self))
            } else {
                if type == UInt8(ascii: "="), body.count >= 4, body[3] == UInt8(ascii: ":") { body.removeFirst(4) }  // "txt:"
                reply = .string(body)
            }
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            let count = try integer(header)
            if count == -1 && type == UInt8(ascii: "*") {
                reply = .null
                break
            }
            guard (0...Self.maxElements).contains(count) else { throw RedisError("RESP: an aggregate of \(count) elements") }
            let elements = type == UInt8(ascii: "%") || type == UInt8(ascii: "|") ? count * 2 : count
            var items = [RedisReply]()
            items.reserveCapacity(min(elements, 1024))
            for _ in 0..<elements {
                guard let item = try parse(&cursor, depth: depth + 1) else { return nil }
                items.append(item.reply)
            }
            if type == UInt8(ascii: "|") {
                // Attributes describe the reply after them; this client has no use for them.
                index = cursor
                return try parse(&index, depth: depth)
            }
            reply = .array(items)  // a map as key, value, key, value…
            isPush = type == UInt8(ascii: ">")
        default:
            throw RedisError("RESP: unknown type byte \(type)")
        }
        index = cursor
        return Item(reply: reply, isPush: isPush)
    }
}
