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
    private var requestLineChecked = false

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
        for index in checkedForBareLF..<checkLimit where buffer[index] == 10 && (index == 0 || buffer[index - 1] != 13) {
            return .failed(.error(400, "bare LF in request head; lines end in CRLF"))
        }
        checkedForBareLF = checkLimit
        if !requestLineChecked, let lineEnd = find(Self.crlf, from: 0) {
            if case .failure(let response) = Self.parseRequestLine(buffer[0..<lineEnd]) { return .failed(response) }
            requestLineChecked = true
        }
        guard let end = headEnd else {
            scanned = buffer.count
            if buffer.count > maxHeadBytes {
                return .failed(.error(431, "request head larger than \(maxHeadBytes) bytes"))
            }
            return .needMore
        }
        guard end + 4 <= maxHeadBytes else {
            return .failed(.error(431, "request head larger than \(maxHeadBytes) bytes"))
        }
        let remainder = Array(buffer[(end + 4)...])
        switch Self.parseHead(buffer[0..<end], maxHeaderCount: maxHeaderCount) {
        case .success(let request): return .complete(request, remainder: remainder)
        case .failure(let response): return .failed(response)
        }
    }

    private static let crlf: [UInt8] = [13, 10]
    private static let crlfcrlf: [UInt8] = [13, 10, 13, 10]

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        var i = start
        while i + needle.count <= buffer.count {
            if buffer[i] == needle[0] && buffer[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    private struct Failure: Error { let response: HTTPResponse }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result2<(String, String, Int)> {
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty,
              parts[0].allSatisfy(isTokenByte),
              parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return .failure(.error(400, "malformed request line")) }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version.hasPrefix("HTTP/"), version.count == 8 else {
            return .failure(.error(400, "malformed HTTP version"))
        }
        guard version.hasPrefix("HTTP/1."), let minor = Int(version.suffix(1)) else {
            return .failure(.error(505, "only HTTP/1.x is supported"))
        }
        return .success((String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), minor))
    }

    private static func parseHead(_ head: ArraySlice<UInt8>, maxHeaderCount: Int) -> Result2<HTTPRequest> {
        var lines = [ArraySlice<UInt8>]()
        var start = head.startIndex
        var i = head.startIndex
        while i < head.endIndex {
            if head[i] == 13 {
                guard i + 1 < head.endIndex, head[i + 1] == 10 else { return .failure(.error(400, "bare CR in request head")) }
                lines.append(head[start..<i])
                i += 2
                start = i
            } else if head[i] == 10 {
                return .failure(.error(400, "bare LF in request head"))
            } else {
                i += 1
            }
        }
        lines.append(head[start..<head.endIndex])
        guard case .success(let (method, target, minor)) = parseRequestLine(lines[0]) else {
            return .failure(.error(400, "malformed request line"))
        }
        guard lines.count - 1 <= maxHeaderCount else {
            return .failure(.error(431, "more than \(maxHeaderCount) header fields"))
        }
        var headers = [(name: String, value: String)]()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(.error(400, "header line without a colon"))
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
                return .failure(.error(400, "invalid header name"))
            }
            let value = line[(colon + 1)...]
            guard value.allSatisfy({ $0 == 9 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                return .failure(.error(400, "control character in header value"))
            }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self).trimmingOWS()))
        }
        // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
        let hosts = HeaderFields.values(headers, "Host").count
        if hosts > 1 { return .failure(.error(400, "more than one Host header")) }
        if hosts == 0 && minor >= 1 { return .failure(.error(400, "missing Host header")) }
        return .success(HTTPRequest(method: method, target: target, minorVersion: minor, headers: headers))
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
