import Bytes
import WebSocketCore

/// A connection event with its payload copied, so tests can compare them.
enum Seen: Equatable, CustomStringConvertible {
    case text(String)
    case invalidText([UInt8])
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    case closed(UInt16, String)
    case failed(UInt16)

    init(_ event: WebSocketConnection.Event) {
        switch event {
        case .text(let bytes):
            self = UTF8Validator.isValid(bytes) ? .text(String(decoding: bytes, as: UTF8.self)) : .invalidText(Array(bytes))
        case .binary(let bytes): self = .binary(Array(bytes))
        case .ping(let bytes): self = .ping(Array(bytes))
        case .pong(let bytes): self = .pong(Array(bytes))
        case .closed(let code, let reason): self = .closed(code.rawValue, reason)
        case .failed(let error): self = .failed(error.closeCode.rawValue)
        }
    }

    var description: String {
        switch self {
        case .text(let s): "text(\(s.prefix(40)))"
        case .invalidText(let b): "invalidText(\(b.count))"
        case .binary(let b): "binary(\(b.count))"
        case .ping(let b): "ping(\(b))"
        case .pong(let b): "pong(\(b))"
        case .closed(let c, let r): "closed(\(c), \(r))"
        case .failed(let c): "failed(\(c))"
        }
    }
}

extension WebSocketConnection {
    /// Feeds `bytes` in pieces of the given sizes (the rest in one piece) and records events.
    func feed(_ bytes: [UInt8], splits: [Int] = []) -> [Seen] {
        var seen = [Seen]()
        var start = 0
        var pieces = splits.map { $0 }
        while start < bytes.count {
            let size = pieces.isEmpty ? bytes.count - start : min(pieces.removeFirst(), bytes.count - start)
            var piece = Array(bytes[start..<(start + size)])
            piece.withUnsafeMutableBytes { receive($0) { seen.append(Seen($0)) } }
            start += size
        }
        return seen
    }

    /// Every queued frame, concatenated, and the queue emptied.
    func takeOutput() -> [UInt8] {
        var out = [UInt8]()
        drainOutbound { out += $0.array }
        return out
    }
}

/// A masked client frame, as a client would send it.
func clientFrame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0, key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]) -> [UInt8] {
    var frame: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
    if payload.count < 126 {
        frame.append(0x80 | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        frame.append(0x80 | 127)
        for i in (0..<8).reversed() { frame.append(UInt8(truncatingIfNeeded: payload.count >> (8 * i))) }
    }
    frame += key
    frame += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    return frame
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
