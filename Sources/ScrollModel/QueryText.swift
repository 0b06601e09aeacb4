/// A URL's query as a server reads it: `name=value` pairs split at `&`, percent-decoded (`+` is
/// a space). One reading for the server's parameters and for every check that a URL carries
/// no secret (`secretQueryParameters`), so that `?%6Bey=…` or `?Key=…` cannot pass a check that
/// looks at the text as written.
public enum QueryText {
    /// The decoded text, or nil for a bad `%` escape or bytes that are not UTF-8 (refused
    /// rather than repaired: `a%zzb` must not match `ab`, nor `%ff` match `%80`).
    public static func decode(_ text: Substring) -> String? {
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Whether a parameter's name, as written, names a secret: decoded (as written when it
    /// does not decode), in any case (a server or proxy that folds case would read it so).
    public static func isSecretName(_ written: Substring) -> Bool { secretName(written) != nil }

    /// The secret parameter (`secretQueryParameters`) that `written` names, if any.
    public static func secretName(_ written: Substring) -> String? {
        let name = (decode(written) ?? String(written)).lowercased()
        return secretQueryParameters.first { $0.lowercased() == name }
    }

    /// What makes `url` unfit to keep where anyone may read it (a recording's header), or nil:
    /// a query parameter that names a secret (`key`, however spelled), or a fragment (a room's
    /// URL has none, RFC 6455 §3, and `#key=…` is a secret all the same).
    public static func secretProblem(inURL url: String) -> String? {
        let utf8 = url.utf8
        if utf8.contains(UInt8(ascii: "#")) { return "has a fragment (#…), which a room's URL never has and which can carry a secret" }
        guard let mark = url.firstIndex(of: "?") else { return nil }
        for pair in url[url.index(after: mark)...].split(separator: "&") {
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            if let secret = secretName(name) { return "holds a secret (\(secret))" }
        }
        return nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
