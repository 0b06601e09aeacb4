/// A TLS failure, with OpenSSL's own words.
public enum TLSError: Error, CustomStringConvertible, Sendable {
    case openSSL(String)

    static func failure(_ what: String) -> TLSError {
        .openSSL("\(what): \(TLSSession.drainErrors())")
    }

    public var description: String {
        switch self { case .openSSL(let message): message }
    }
}

/// Why a TLS connection failed, as a person needs to hear it.
public enum TLSFailure: Sendable, Equatable, CustomStringConvertible {
    /// The peer's certificate did not verify (OpenSSL's reason: self-signed, expired,
    /// hostname mismatch…). Retrying cannot help.
    case untrusted(String)
    /// The peer does not speak TLS (it answered in plain text). Retrying cannot help.
    case notTLS
    case other(String)

    public var description: String {
        switch self {
        case .untrusted(let why): "the server's certificate is not trusted: \(why)"
        case .notTLS: "not a TLS server (it answered in plain text; use ws:// for it)"
        case .other(let why): "TLS failed: \(why)"
        }
    }

    /// Whether trying again cannot succeed.
    public var isPermanent: Bool { if case .other = self { false } else { true } }
}
