/// A close status code (RFC 6455 §7.4, IANA registry).
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = CloseCode(1000)
    public static let goingAway = CloseCode(1001)
    public static let protocolError = CloseCode(1002)
    public static let unsupportedData = CloseCode(1003)
    /// Reported when a close frame carried no code; never sent.
    public static let noStatus = CloseCode(1005)
    /// Reported when the connection dropped without a close frame; never sent.
    public static let abnormal = CloseCode(1006)
    public static let invalidPayload = CloseCode(1007)
    public static let policyViolation = CloseCode(1008)
    public static let messageTooBig = CloseCode(1009)
    public static let mandatoryExtension = CloseCode(1010)
    public static let internalError = CloseCode(1011)
    public static let serviceRestart = CloseCode(1012)
    public static let tryAgainLater = CloseCode(1013)

    /// Whether a peer may put this code in a close frame (§7.4.1–7.4.2): the defined
    /// codes 1000–1003 and 1007–1014, and 3000–4999 for libraries and applications.
    public var isAllowedOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String { String(rawValue) }
}
