import Foundation
import ScrollModel

/// Debian's `chromium`, headless, driven over the Chrome DevTools Protocol from the test: a
/// browser of its own (a fresh profile in a temporary directory), closed when this is freed.
final class Chromium {
    let child: Child
    let port: Int
    private let profile: URL

    init() throws {
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString.prefix(8))")
        child = try Child("/usr/bin/env", ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                           "--no-default-browser-check", "--remote-debugging-port=0", "--user-data-dir=\(profile.path)",
                                           "--hide-scrollbars", "about:blank"])
        var found: Int?
        _ = child.waitForOutput(timeout: 30) { lines in
            found = lines.lazy.compactMap { line -> Int? in
                guard let range = line.range(of: "DevTools listening on ws://127.0.0.1:") else { return nil }
                return Int(line[range.upperBound...].prefix { $0.isNumber })
            }.first
            return found != nil
        }
        guard let found else { throw Failure("chromium did not start (apt-get install chromium): \(child.output.suffix(400))") }
        port = found
    }

    deinit {
        child.stop()
        try? FileManager.default.removeItem(at: profile)
    }

    /// A new tab, `width` × `height` CSS pixels.
    func page(width: Int, height: Int) throws -> CDPPage {
        let client = try RawClient(port: port)
        client.send("PUT /json/new?about:blank HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 0\r\n\r\n")
        let answer = String(decoding: client.receiveUntilClosed(timeout: 10).bytes, as: UTF8.self)
        guard let body = answer.range(of: "\r\n\r\n").map({ String(answer[$0.upperBound...]) }),
              let json = try? JSON.parse(body.trimmingCharacters(in: .whitespacesAndNewlines)),
              let url = json["webSocketDebuggerUrl"]?.string, let path = url.range(of: "/devtools/").map({ String(url[$0.lowerBound...]) }) else {
            throw Failure("no new tab: \(answer.prefix(300))")
        }
        let page = try CDPPage(port: port, path: path)
        _ = try page.call("Emulation.setDeviceMetricsOverride", #"{"width":\#(width),"height":\#(height),"deviceScaleFactor":1,"mobile":false}"#)
        return page
    }
}

/// One tab's DevTools connection: commands and their results (events are skipped).
final class CDPPage {
    private let client: RawClient
    private var buffer = [UInt8]()
    private var nextID = 1

    init(port: Int, path: String) throws {
        client = try RawClient(port: port)
        let head = client.upgrade(path: path)
        guard head.hasPrefix("HTTP/1.1 101") else { throw Failure("DevTools refused the WebSocket: \(head.prefix(200))") }
        if let end = head.range(of: "\r\n\r\n") { buffer = Array(head[end.upperBound...].utf8) }
    }

    /// Sends `method` with `params` (a JSON object) and returns the result object.
    @discardableResult
    func call(_ method: String, _ params: String = "{}", timeout: TimeInterval = 20) throws -> JSON {
        let id = nextID
        nextID += 1
        client.send(maskedFrame(0x1, Array(#"{"id":\#(id),"method":"\#(method)","params":\#(params)}"#.utf8)))
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            while let text = nextText() {
                guard let json = try? JSON.parse(text), json["id"]?.double == Double(id) else { continue }
                if let error = json["error"] { throw Failure("\(method) failed: \(error)") }
                return json["result"] ?? .null
            }
            buffer += client.receive(atLeast: 1, timeout: 0.2)
        }
        throw Failure("no answer to \(method) in \(timeout) s")
    }

    /// Evaluates `expression` in the page and returns its value (JSON-able).
    func evaluate(_ expression: String) throws -> JSON {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("expression", expression)
        writer.key("returnByValue")
        writer.bool(true)
        writer.key("awaitPromise")
        writer.bool(true)
        writer.endObject()
        let result = try call("Runtime.evaluate", String(decoding: writer.bytes, as: UTF8.self))
        if let exception = result["exceptionDetails"] { throw Failure("\(expression.prefix(80)) threw \(exception)") }
        return result["result"]?["value"] ?? .null
    }

    /// Polls `expression` until it is true, up to `timeout` seconds.
    @discardableResult
    func wait(_ expression: String, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if (try? evaluate(expression))?.bool == true { return true }
            usleep(50_000)
        } while Date() < deadline
        return false
    }

    /// The next complete text frame from the buffer (unmasked; 7-, 16- and 64-bit lengths).
    private func nextText() -> String? {
        while buffer.count >= 2 {
            var length = Int(buffer[1] & 0x7F)
            var header = 2
            if length == 126 {
                guard buffer.count >= 4 else { return nil }
                length = Int(buffer[2]) << 8 | Int(buffer[3])
                header = 4
            } else if length == 127 {
                guard buffer.count >= 10 else { return nil }
                length = (2..<10).reduce(0) { $0 << 8 | Int(buffer[$1]) }
                header = 10
            }
            guard buffer.count >= header + length else { return nil }
            let opcode = buffer[0] & 0x0F
            let payload = buffer[header..<(header + length)]
            buffer.removeFirst(header + length)
            if opcode == 0x1 { return String(decoding: payload, as: UTF8.self) }
        }
        return nil
    }
}
