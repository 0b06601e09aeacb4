import HTTP1
/// One element of a `Sec-WebSocket-Extensions` list (RFC 6455 §9.1).
public struct ExtensionOffer: Sendable, Equatable {
    public var name: String
    /// Parameters in order; a nil value means the parameter had none.
    public var parameters: [Parameter]

    public struct Parameter: Sendable, Equatable {
        public var name: String
        public var value: String?
        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    public init(name: String, parameters: [Parameter] = []) {
        self.name = name
        self.parameters = parameters
    }

    /// Parses every value of the header into offers; nil when the syntax is malformed.
    ///
    /// `extension = token *(";" param)`, `param = token ["=" (token / quoted-string)]`,
    /// and a quoted value must itself be a token once unquoted.
    public static func parse(_ values: [String]) -> [ExtensionOffer]? {
        var offers = [ExtensionOffer]()
        for value in values {
            guard let parsed = parseList(Array(value.utf8)) else { return nil }
            offers += parsed
        }
        return offers
    }

    private static func parseList(_ bytes: [UInt8]) -> [ExtensionOffer]? {
        var offers = [ExtensionOffer]()
        var cursor = Cursor(bytes: bytes)
        repeat {
            cursor.skipSpace()
            if cursor.peek == UInt8(ascii: ",") { cursor.index += 1; continue }  // empty list element
            if cursor.atEnd { break }
            guard let name = cursor.token() else { return nil }
            var offer = ExtensionOffer(name: name.lowercased())
            cursor.skipSpace()
            while cursor.peek == UInt8(ascii: ";") {
                cursor.index += 1
                cursor.skipSpace()
                guard let parameter = cursor.token() else { return nil }
                cursor.skipSpace()
                var value: String?
                if cursor.peek == UInt8(ascii: "=") {
                    cursor.index += 1
                    cursor.skipSpace()
                    if cursor.peek == UInt8(ascii: "\"") {
                        guard let quoted = cursor.quotedString(), !quoted.isEmpty,
                              quoted.utf8.allSatisfy(HTTPRequestParser.isTokenByte) else { return nil }
                        value = quoted
                    } else {
                        guard let token = cursor.token() else { return nil }
                        value = token
                    }
                    cursor.skipSpace()
                }
                offer.parameters.append(Parameter(name: parameter.lowercased(), value: value))
            }
            offers.append(offer)
            guard cursor.atEnd || cursor.peek == UInt8(ascii: ",") else { return nil }
            if !cursor.atEnd { cursor.index += 1 }
        } while !cursor.atEnd
        return offers
    }

    /// The offer as header text, e.g. `permessage-deflate; client_max_window_bits`.
    public var headerValue: String {
        ([name] + parameters.map { p in p.value.map { "\(p.name)=\($0)" } ?? p.name }).joined(separator: "; ")
    }
}

private struct Cursor {
    let bytes: [UInt8]
    var index = 0

    var atEnd: Bool { index >= bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[index] }

    mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 { index += 1 }
    }

    mutating func token() -> String? {
        let start = index
        while let byte = peek, HTTPRequestParser.isTokenByte(byte) { index += 1 }
        return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
    }

    mutating func quotedString() -> String? {
        index += 1
        var out = [UInt8]()
        while let byte = peek {
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = peek else { return nil }
                out.append(escaped)
                index += 1
            default: out.append(byte)
            }
        }
        return nil
    }
}
