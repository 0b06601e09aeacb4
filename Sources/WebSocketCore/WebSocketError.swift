/// Why a WebSocket connection is being failed. `closeCode` is the one place where an
/// error becomes a close code (RFC 6455 §7.4.1).
public enum WebSocketError: Error, Equatable, Sendable {
    /// A framing or protocol rule was broken (reserved bits or opcodes, bad fragmentation,
    /// unmasked client frame, oversized or fragmented control frame, bad close payload).
    case protocolViolation(String)
    /// A text message or close reason was not valid UTF-8.
    case invalidUTF8
    /// A frame or message exceeded the configured limit.
    case tooLarge(limit: Int)
    /// A compressed message could not be inflated.
    case badCompression(String)
    /// The process holds as many unfinished messages as its budget allows (`MessageBudget`).
    case overloaded
    /// A message was not finished within the deadline (in seconds).
    case unfinished(seconds: Int)

    public var closeCode: CloseCode {
        switch self {
        case .protocolViolation, .badCompression: .protocolError
        case .invalidUTF8: .invalidPayload
        case .tooLarge: .messageTooBig
        case .overloaded: .tryAgainLater
        case .unfinished: .policyViolation
        }
    }

    /// A short reason for the close frame (at most 123 bytes).
    public var reason: String {
        let text = switch self {
        case .protocolViolation(let what): what
        case .invalidUTF8: "invalid UTF-8 in text"
        case .tooLarge(let limit): "message larger than \(limit) bytes"
        case .badCompression(let what): "bad compressed data: \(what)"
        case .overloaded: "server busy: too much memory in unfinished messages; try again later"
        case .unfinished(let seconds): "message not finished within \(seconds) s"
        }
        return String(decoding: Array(text.utf8.prefix(123)), as: UTF8.self)
    }
}
