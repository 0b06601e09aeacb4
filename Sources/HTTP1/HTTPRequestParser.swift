#if canImport(Glibc)
import Glibc
#endif

/// Incremental parser for one HTTP/1.1 request head (RFC 9112).
///
/// Feed it bytes as they arrive, split anywhere. It answers `.needMore` until the blank
/// line, then the request and whatever bytes followed it (pipelined data, such as the
/// first WebSocket frames). A bad request line is refused as soon as its line ends;
/// a head larger than `maxHeadBytes` is refused with 431.
public struct HTTPRequestParser: Sendable {
    public enum Result: Sendable, Equatable {
        case needMore
        case complete(HTTPRequest, remainder: [UInt8])
        case failed(HTTPResponse)
    }

    /// Largest request head accepted. 8 KiB is what nginx and uWS accept by default.
    public let maxHeadBytes: Int
    /// Most header fields accepted (100, as Node does).
    public let maxHeaderCount: Int

    private var buffer: [UInt8] = []
    private var scanned = 0
    /// Bytes of the head already checked for a bare LF.
    private var checkedForBareLF = 0
    /// The request line, once it has ended and was found valid.
    private var requestLine: RequestLine?

    private struct RequestLine {
        var method: String
        var target: String
        var minorVersion: Int
        /// Where its CRLF starts.
        var end: Int
    }

    public init(maxHeadBytes: Int = 8192, maxHeaderCount: Int = 100) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
    }

    public mutating func parse(_ bytes: UnsafeRawBufferPointer) -> Result {
        buffer.append(contentsOf: bytes)
        // The checks look only at the first `maxHeadBytes` and in the order of the bytes, so
        // that a head fails the same way however it was split into reads.
        if requestLine == nil, let lineEnd = findLineEnd(from: max(0, scanned - 1), blankLine: false),  // no CRLF began before the last read
           lineEnd + 2 <= maxHeadBytes {
            switch buffer.withUnsafeBufferPointer({ Self.parseRequestLine(UnsafeBufferPointer(rebasing: $0[0..<lineEnd])) }) {
            case .failure(let response): return .failed(response)
            case .success(let line): requestLine = line
            }
        }
        let headEnd = findLineEnd(from: max(0, scanned - 3), blankLine: true)
        // A head whose lines end in a bare LF would never show its CRLF CRLF: refused now,
        // not when the handshake times out. (Bytes after the head may hold any value.)
        let checkLimit = min(headEnd.map { $0 + 4 } ?? buffer.count, maxHeadBytes)
        let bareLF = buffer.withUnsafeBufferPointer { bytes in
            var lf = Self.index(of: 10, in: bytes, from: checkedForBareLF, to: checkLimit)
            while let at = lf {
                if at == 0 || bytes[at - 1] != 13 { return true }
                lf = Self.index(of: 10, in: bytes, from: at + 1, to: checkLimit)
            }
            return false
        }
        if bareLF { return .failed(.error(400, "bare LF in request head; lines end in CRLF")) }
        checkedForBareLF = max(checkedForBareLF, checkLimit)
        guard let end = headEnd, let line = requestLine else {
            scanned = buffer.count
            if buffer.count > maxHeadBytes {
                return .failed(.error(431, "request head larger than \(maxHeadBytes) bytes"))
            }
            return .needMore
        }
        guard end + 4 <= maxHeadBytes else {
            return .failed(.error(431, "request head larger than \(maxHeadBytes) bytes"))
        }
        switch parseFields(from: line.end + 2, to: end) {
        case .failure(let response):
            return .failed(response)
        case .success(let fields):
            // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0, and a
            // value that is host[:port].
            switch fields.withSingleValue(.host, Self.isHostValue) {
            case true?: break
            case false?: return .failed(.error(400, "invalid Host header: it is host[:port]"))
            case nil:
                if fields.contains(.host) { return .failed(.error(400, "more than one Host header")) }
                if line.minorVersion >= 1 { return .failed(.error(400, "missing Host header")) }
            }
            if let problem = Self.framingProblem(fields, minorVersion: line.minorVersion) { return .failed(.error(400, problem)) }
            let request = HTTPRequest(method: line.method, target: line.target, minorVersion: line.minorVersion, fields: fields)
            return .complete(request, remainder: Array(buffer[(end + 4)...]))
        }
    }

    /// Whether `value` is a Host field's value (RFC 9112 §3.2, RFC 3986 §3.2.2): an IP literal
    /// in brackets or a registered name (IPv4 included: unreserved characters, sub-delims and
    /// %-escapes; empty allowed), then optionally `:` and digits.
    static func isHostValue(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if value.first == UInt8(ascii: "[") {
            guard let close = value.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return false }
            // IPv6 (with a zone's %25, RFC 6874) or IPvFuture: hex digits, dots and colons, or
            // a version's unreserved, sub-delims and colons; the exact grammar matters less
            // than no space, slash or bracket.
            guard value[1..<close].allSatisfy({ isRegisteredNameByte($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "%") }) else { return false }
            index = close + 1
        } else {
            while index < value.count, value[index] != UInt8(ascii: ":") {
                if value[index] == UInt8(ascii: "%") {
                    guard index + 2 < value.count, isHexDigit(value[index + 1]), isHexDigit(value[index + 2]) else { return false }
                    index += 3
                } else {
                    guard isRegisteredNameByte(value[index]) else { return false }
                    index += 1
                }
            }
        }
        guard index < value.count else { return true }
        guard value[index] == UInt8(ascii: ":") else { return false }
        return value[(index + 1)...].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
    }

    /// unreserved / sub-delims (RFC 3986 §2.2, §2.3), by a masking shift as `isTokenByte`.
    private static func isRegisteredNameByte(_ byte: UInt8) -> Bool {
        let bits: UInt64 = byte < 64 ? 0x2BFF_7FD2_0000_0000 : 0x47FF_FFFE_87FF_FFFE
        return byte < 128 && bits &>> UInt64(byte & 63) & 1 == 1
    }

    /// Why the content's length would be ambiguous (RFC 9112 §6.1, §6.3), or nil: a
    /// Transfer-Encoding in HTTP/1.0 or beside a Content-Length (the request-smuggling
    /// pair), or a Content-Length that is not one decimal number (repeats must agree).
    static func framingProblem(_ fields: HTTPFields, minorVersion: Int) -> String? {
        let transferCoded = fields.contains(.transferEncoding)
        if transferCoded && minorVersion == 0 { return "Transfer-Encoding in an HTTP/1.0 request" }
        guard fields.contains(.contentLength) else { return nil }
        if transferCoded { return "both Transfer-Encoding and Content-Length" }
        let lengths = fields.tokens(.contentLength)
        guard let first = lengths.first, first.utf8.count <= 18, first.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              lengths.allSatisfy({ $0 == first })
        else { return "invalid Content-Length" }
        return nil
    }

    /// Where the first CRLF (or, with `blankLine`, CRLF CRLF) at or after `start` begins:
    /// found from each LF, the rarest byte of the pair.
    private func findLineEnd(from start: Int, blankLine: Bool) -> Int? {
        buffer.withUnsafeBufferPointer { bytes in
            let span = blankLine ? 3 : 1
            var next = Self.index(of: 10, in: bytes, from: start + span, to: bytes.count)
            while let lf = next {
                if bytes[lf - 1] == 13 && (!blankLine || (bytes[lf - 2] == 10 && bytes[lf - 3] == 13)) {
                    return lf - span
                }
                next = Self.index(of: 10, in: bytes, from: lf + 1, to: bytes.count)
            }
            return nil
        }
    }

    /// The first index of `byte` in `bytes[start..<end]` (memchr: a head is scanned a word at a time).
    private static func index(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int? {
        guard start < end, let base = bytes.baseAddress,
              let found = memchr(base + start, Int32(byte), end - start) else { return nil }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// `method SP request-target SP HTTP-version` (RFC 9112 §3), without its CRLF.
    private static func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) -> Result2<RequestLine> {
        func malformed() -> Result2<RequestLine> { .failure(.error(400, "malformed request line")) }
        guard !line.contains(10) else { return .failure(.error(400, "bare LF in request head; lines end in CRLF")) }
        var methodEnd = 0
        while methodEnd < line.count && isTokenByte(line[methodEnd]) { methodEnd += 1 }
        guard methodEnd > 0, methodEnd < line.count, line[methodEnd] == UInt8(ascii: " ") else { return malformed() }
        var targetEnd = methodEnd + 1
        while targetEnd < line.count && line[targetEnd] > 0x20 && line[targetEnd] < 0x7F { targetEnd += 1 }
        guard targetEnd > methodEnd + 1, targetEnd < line.count, line[targetEnd] == UInt8(ascii: " ") else { return malformed() }
        let version = UnsafeBufferPointer(rebasing: line[(targetEnd + 1)...])
        guard !version.contains(UInt8(ascii: " ")) else { return malformed() }
        guard version.count == 8, version[0] == UInt8(ascii: "H"), version[1] == UInt8(ascii: "T"), version[2] == UInt8(ascii: "T"),
              version[3] == UInt8(ascii: "P"), version[4] == UInt8(ascii: "/") else {
            return .failure(.error(400, "malformed HTTP version"))
        }
        let minor = version[7]
        guard version[5] == UInt8(ascii: "1"), version[6] == UInt8(ascii: "."), minor >= UInt8(ascii: "0"), minor <= UInt8(ascii: "9") else {
            return .failure(.error(505, "only HTTP/1.x is supported"))
        }
        return .success(RequestLine(method: String(decoding: UnsafeBufferPointer(rebasing: line[..<methodEnd]), as: UTF8.self),
                                    target: String(decoding: UnsafeBufferPointer(rebasing: line[(methodEnd + 1)..<targetEnd]), as: UTF8.self),
                                    minorVersion: Int(minor - UInt8(ascii: "0")), end: line.count))
    }

    /// The field lines between `start` and `end` (the head's final CRLF CRLF), each
    /// `name ":" OWS value OWS` (RFC 9112 §5), found in place.
    private func parseFields(from start: Int, to end: Int) -> Result2<HTTPFields> {
        let found = buffer.withUnsafeBufferPointer { bytes in Self.fieldRanges(in: bytes, from: start, to: end, maxCount: maxHeaderCount) }
        switch found {
        case .success(let fields): return .success(HTTPFields(bytes: buffer, fields: fields))
        case .failure(let response): return .failure(response)
        }
    }

    /// The fields of a well-formed head in one pass over its bytes; a head that this pass
    /// does not accept (whatever is wrong with it, or a field count over the limit) is
    /// parsed again by `checkedFieldRanges`, whose answer says what is wrong. So this pass
    /// never decides a refusal: it accepts a head only when every line is `token ":" value`
    /// with a value of visible bytes, spaces and tabs, as that function does.
    private static func fieldRanges(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, maxCount: Int) -> Result2<[HTTPFields.Field]> {
        var fields = [HTTPFields.Field]()
        fields.reserveCapacity(min(maxCount, 16))
        var at = start
        while at < end {
            let nameStart = at
            while at < end && isTokenByte(bytes[at]) { at += 1 }
            guard at > nameStart, at < end, bytes[at] == UInt8(ascii: ":"), fields.count < maxCount else { break }
            let colon = at
            at = index(of: 13, in: bytes, from: colon + 1, to: end) ?? end
            // Not the last line: it must end in CRLF.
            guard areValueBytes(UnsafeBufferPointer(rebasing: bytes[(colon + 1)..<at])), at == end || bytes[at + 1] == 10 else { break }
            fields.append(HTTPFields.Field(name: nameStart..<colon, value: HTTPFields.trimmingOWS((colon + 1)..<at, in: bytes), in: bytes))
            if at == end { return .success(fields) }
            at += 2
        }
        return start < end ? checkedFieldRanges(in: bytes, from: start, to: end, maxCount: maxCount) : .success(fields)
    }

    /// A header value's byte (RFC 9110 §5.5): visible, a space or a tab, or above 0x7F.
    private static func isValueByte(_ byte: UInt8) -> Bool { byte >= 0x20 ? byte != 0x7F : byte == 9 }

    /// Whether every byte is a value byte (as `isValueByte`): each is looked at, without a
    /// branch, so that the compiler checks 16 at a time (a value is rarely refused).
    static func areValueBytes(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var refused: UInt8 = 0
        for byte in bytes {  // below 0x20 or 0x7F (so 0x7F ... 0x1F, wrapping, less 0x80 ... 0xFF), but not a tab
            refused |= (byte &- 0x20 >= 0x5F ? 1 : 0) & (byte < 0x80 ? 1 : 0) & (byte != 9 ? 1 : 0)
        }
        return refused == 0
    }

    /// `fieldRanges` line by line, each check in turn: the answer for a head it refuses says why.
    private static func checkedFieldRanges(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, maxCount: Int) -> Result2<[HTTPFields.Field]> {
        var lines = start < end ? 1 : 0
        var cr = index(of: 13, in: bytes, from: start, to: end)
        while let at = cr {
            lines += 1
            cr = index(of: 13, in: bytes, from: at + 1, to: end)
        }
        guard lines <= maxCount else { return .failure(.error(431, "more than \(maxCount) header fields")) }
        var fields = [HTTPFields.Field]()
        fields.reserveCapacity(lines)
        var lineStart = start
        while lineStart < end {
            let lineEnd = index(of: 13, in: bytes, from: lineStart, to: end) ?? end
            if index(of: 10, in: bytes, from: lineStart, to: lineEnd) != nil { return .failure(.error(400, "bare LF in request head")) }
            if lineEnd < end && bytes[lineEnd + 1] != 10 { return .failure(.error(400, "bare CR in request head")) }
            guard let colon = index(of: UInt8(ascii: ":"), in: bytes, from: lineStart, to: lineEnd) else {
                return .failure(.error(400, "header line without a colon"))
            }
            guard colon > lineStart, UnsafeBufferPointer(rebasing: bytes[lineStart..<colon]).allSatisfy(isTokenByte) else {
                return .failure(.error(400, "invalid header name"))
            }
            guard UnsafeBufferPointer(rebasing: bytes[(colon + 1)..<lineEnd]).allSatisfy(isValueByte) else {
                return .failure(.error(400, "control character in header value"))
            }
            fields.append(HTTPFields.Field(name: lineStart..<colon, value: HTTPFields.trimmingOWS((colon + 1)..<lineEnd, in: bytes), in: bytes))
            lineStart = lineEnd + 2
        }
        return .success(fields)
    }

    /// tchar (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters, as two bitmasks
    /// (bytes 0–63 and 64–127).
    package static func isTokenByte(_ byte: UInt8) -> Bool {
        let bits: UInt64 = byte < 64 ? 0x03FF_6CFA_0000_0000 : 0x57FF_FFFF_C7FF_FFFE
        return byte < 128 && bits &>> UInt64(byte & 63) & 1 == 1  // a masking shift: no test for shifting past 63
    }
}

/// A result whose failure is a ready HTTP answer.
enum Result2<Value> {
    case success(Value)
    case failure(HTTPResponse)
}
