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
        let headEnd = find(Self.crlfcrlf, from: max(0, scanned - 3))
        // A head whose lines end in a bare LF would never show its CRLF CRLF: refused now,
        // not when the handshake times out. (Bytes after the head may hold any value.)
        let checkLimit = headEnd.map { $0 + 4 } ?? buffer.count
        let bareLF = buffer.withUnsafeBufferPointer { bytes in
            (checkedForBareLF..<checkLimit).contains { bytes[$0] == 10 && ($0 == 0 || bytes[$0 - 1] != 13) }
        }
        if bareLF { return .failed(.error(400, "bare LF in request head; lines end in CRLF")) }
        checkedForBareLF = checkLimit
        if requestLine == nil, let lineEnd = find(Self.crlf, from: 0) {
            switch Self.parseRequestLine(buffer[0..<lineEnd]) {
            case .failure(let response): return .failed(response)
            case .success(let line): requestLine = line
            }
        }
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
            // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
            let hosts = fields.count(of: "Host")
            if hosts > 1 { return .failed(.error(400, "more than one Host header")) }
            if hosts == 0 && line.minorVersion >= 1 { return .failed(.error(400, "missing Host header")) }
            let request = HTTPRequest(method: line.method, target: line.target, minorVersion: line.minorVersion, fields: fields)
            return .complete(request, remainder: Array(buffer[(end + 4)...]))
        }
    }

    private static let crlf: [UInt8] = [13, 10]
    private static let crlfcrlf: [UInt8] = [13, 10, 13, 10]

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        buffer.withUnsafeBufferPointer { bytes in
            guard bytes.count >= needle.count else { return nil }
            var i = start
            while i + needle.count <= bytes.count {
                var matched = 0
                while matched < needle.count && bytes[i + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return i }
                i += 1
            }
            return nil
        }
    }

    /// `method SP request-target SP HTTP-version` (RFC 9112 §3), without its CRLF.
    private static func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result2<RequestLine> {
        let malformed = Result2<RequestLine>.failure(.error(400, "malformed request line"))
        guard let methodEnd = line.firstIndex(of: UInt8(ascii: " ")),
              let targetEnd = line[(methodEnd + 1)...].firstIndex(of: UInt8(ascii: " ")),
              !line[(targetEnd + 1)...].contains(UInt8(ascii: " "))
        else { return malformed }
        let method = line[line.startIndex..<methodEnd]
        let target = line[(methodEnd + 1)..<targetEnd]
        let version = line[(targetEnd + 1)...]
        guard !method.isEmpty, !target.isEmpty, method.allSatisfy(isTokenByte), target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return malformed
        }
        guard version.count == 8, version.starts(with: "HTTP/".utf8) else {
            return .failure(.error(400, "malformed HTTP version"))
        }
        let minor = version[version.endIndex - 1]
        guard version.starts(with: "HTTP/1.".utf8), minor >= UInt8(ascii: "0"), minor <= UInt8(ascii: "9") else {
            return .failure(.error(505, "only HTTP/1.x is supported"))
        }
        return .success(RequestLine(method: String(decoding: method, as: UTF8.self), target: String(decoding: target, as: UTF8.self),
                                    minorVersion: Int(minor - UInt8(ascii: "0")), end: line.endIndex))
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

    private static func fieldRanges(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, maxCount: Int) -> Result2<[HTTPFields.Field]> {
        var lines = 0
        if start < end {
            lines = 1
            for index in start..<end where bytes[index] == 13 { lines += 1 }
        }
        guard lines <= maxCount else { return .failure(.error(431, "more than \(maxCount) header fields")) }
        var fields = [HTTPFields.Field]()
        fields.reserveCapacity(lines)
        var lineStart = start
        while lineStart < end {
            var lineEnd = lineStart
            var colon: Int?
            var nameIsToken = true
            var valueIsText = true
            while lineEnd < end && bytes[lineEnd] != 13 {
                let byte = bytes[lineEnd]
                if byte == 10 { return .failure(.error(400, "bare LF in request head")) }
                if colon == nil {
                    if byte == UInt8(ascii: ":") {
                        colon = lineEnd
                    } else if !isTokenByte(byte) {
                        nameIsToken = false
                    }
                } else if !(byte == 9 || (byte >= 0x20 && byte != 0x7F)) {
                    valueIsText = false
                }
                lineEnd += 1
            }
            if lineEnd < end && bytes[lineEnd + 1] != 10 { return .failure(.error(400, "bare CR in request head")) }
            guard let colon else { return .failure(.error(400, "header line without a colon")) }
            guard colon > lineStart, nameIsToken else { return .failure(.error(400, "invalid header name")) }
            guard valueIsText else { return .failure(.error(400, "control character in header value")) }
            var valueStart = colon + 1
            var valueEnd = lineEnd
            while valueStart < valueEnd && HTTPFields.isOWS(bytes[valueStart]) { valueStart += 1 }
            while valueEnd > valueStart && HTTPFields.isOWS(bytes[valueEnd - 1]) { valueEnd -= 1 }
            fields.append(HTTPFields.Field(nameStart: Int32(lineStart), nameEnd: Int32(colon),
                                           valueStart: Int32(valueStart), valueEnd: Int32(valueEnd)))
            lineStart = lineEnd + 2
        }
        return .success(fields)
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

/// A result whose failure is a ready HTTP answer.
enum Result2<Value> {
    case success(Value)
    case failure(HTTPResponse)
}
