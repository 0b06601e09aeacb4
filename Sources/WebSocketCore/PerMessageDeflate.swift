import Deflate

/// permessage-deflate (RFC 7692): the parameters two peers agreed on, and the pure
/// functions that negotiate them.
public struct PerMessageDeflate: Sendable, Equatable {
    public static let name = "permessage-deflate"

    /// The server resets its compressor after every message.
    public var serverNoContextTakeover = false
    /// The client resets its compressor after every message.
    public var clientNoContextTakeover = false
    /// Largest LZ77 window the server may use (8…15); nil means 15.
    public var serverMaxWindowBits: Int?
    /// Largest LZ77 window the client may use (8…15); nil means 15.
    public var clientMaxWindowBits: Int?

    public init(serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false,
                serverMaxWindowBits: Int? = nil, clientMaxWindowBits: Int? = nil) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
    }

    /// What a server is willing to do.
    public struct ServerPolicy: Sendable, Equatable {
        /// Accept permessage-deflate at all.
        public var enabled: Bool
        /// Reset the server's compressor after every message even when the client did not
        /// ask: it makes one compressed broadcast frame valid for every receiver and saves
        /// the 32 KiB window per connection.
        public var alwaysNoContextTakeover: Bool

        public init(enabled: Bool = true, alwaysNoContextTakeover: Bool = false) {
            self.enabled = enabled
            self.alwaysNoContextTakeover = alwaysNoContextTakeover
        }
    }

    /// Picks the first acceptable permessage-deflate offer (RFC 7692 §5). Offers with an
    /// unknown, repeated or invalid parameter are declined, as §7 requires.
    /// Returns the agreement and the response header value, or nil to decline them all.
    public static func negotiate(offers: [ExtensionOffer], policy: ServerPolicy = .init()) -> (PerMessageDeflate, String)? {
        guard policy.enabled else { return nil }
        for offer in offers where offer.name == name {
            guard var agreed = parse(offer.parameters, clientMayOmitWindowValue: true) else { continue }
            if policy.alwaysNoContextTakeover { agreed.serverNoContextTakeover = true }
            var response = [name]
            if agreed.serverNoContextTakeover { response.append("server_no_context_takeover") }
            if agreed.clientNoContextTakeover { response.append("client_no_context_takeover") }
            if let bits = agreed.serverMaxWindowBits { response.append("server_max_window_bits=\(bits)") }
            // A bare client_max_window_bits only says the client understands the
            // parameter; we do not restrict its window, so nothing is echoed for it.
            if let bits = agreed.clientMaxWindowBits { response.append("client_max_window_bits=\(bits)") }
            return (agreed, response.joined(separator: "; "))
        }
        return nil
    }

    /// Validates a server's response to `offered` (the client side of §5).
    /// Returns nil when the response is not one the client can accept.
    public static func accept(response: ExtensionOffer, offered: PerMessageDeflate, offeredClientWindow: Bool) -> PerMessageDeflate? {
        guard response.name == name, let agreed = parse(response.parameters, clientMayOmitWindowValue: false) else { return nil }
        if agreed.clientMaxWindowBits != nil && !offeredClientWindow { return nil }
        if offered.serverNoContextTakeover && !agreed.serverNoContextTakeover { return nil }
        if let wanted = offered.serverMaxWindowBits, (agreed.serverMaxWindowBits ?? 15) > wanted { return nil }
        return agreed
    }

    /// The client's offer header value for `self`.
    public func offerHeaderValue(offerClientWindow: Bool = true) -> String {
        var parts = [Self.name]
        if serverNoContextTakeover { parts.append("server_no_context_takeover") }
        if clientNoContextTakeover { parts.append("client_no_context_takeover") }
        if let bits = serverMaxWindowBits { parts.append("server_max_window_bits=\(bits)") }
        if let bits = clientMaxWindowBits { parts.append("client_max_window_bits=\(bits)") } else if offerClientWindow { parts.append("client_max_window_bits") }
        return parts.joined(separator: "; ")
    }

    private static func parse(_ parameters: [ExtensionOffer.Parameter], clientMayOmitWindowValue: Bool) -> PerMessageDeflate? {
        var result = PerMessageDeflate()
        var seen = Set<String>()
        for parameter in parameters {
            guard seen.insert(parameter.name).inserted else { return nil }
            switch parameter.name {
            case "server_no_context_takeover":
                guard parameter.value == nil else { return nil }
                result.serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard parameter.value == nil else { return nil }
                result.clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = windowBits(parameter.value) else { return nil }
                result.serverMaxWindowBits = bits
            case "client_max_window_bits":
                if parameter.value == nil && clientMayOmitWindowValue { continue }
                guard let bits = windowBits(parameter.value) else { return nil }
                result.clientMaxWindowBits = bits
            default:
                return nil
            }
        }
        return result
    }

    /// 8…15 written without leading zeros (RFC 7692 §7.1.2).
    private static func windowBits(_ value: String?) -> Int? {
        guard let value, let bits = Int(value), (8...15).contains(bits), String(bits) == value else { return nil }
        return bits
    }

    /// The compressor and decompressor for one side of a connection.
    ///
    /// zlib cannot write raw DEFLATE with an 8-bit window, so when the peer limits our
    /// window to 8 the compressor is nil and messages go out uncompressed, which RFC 7692
    /// allows for any message.
    /// - Parameter ownDeflater: false when the caller compresses with a shared compressor.
    public func codecs(isServer: Bool, level: Int32 = 6, memLevel: Int32 = 8, ownDeflater: Bool = true) -> (deflater: Deflater?, inflater: Inflater) {
        let ownWindow = (isServer ? serverMaxWindowBits : clientMaxWindowBits) ?? 15
        let ownReset = isServer ? serverNoContextTakeover : clientNoContextTakeover
        let peerReset = isServer ? clientNoContextTakeover : serverNoContextTakeover
        let deflater = ownWindow >= 9 && ownDeflater
            ? Deflater(windowBits: ownWindow, level: level, memLevel: memLevel, noContextTakeover: ownReset) : nil
        return (deflater, Inflater(windowBits: 15, noContextTakeover: peerReset))
    }
}
