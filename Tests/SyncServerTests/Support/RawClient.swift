import Foundation

/// A blocking TCP client for sending exact bytes (bad input) and reading what comes back.
final class RawClient {
    let fd: Int32

    /// - Parameter source: the loopback address to connect from (another client address).
    init(port: Int, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket: errno \(errno)") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw Failure("bind \(source): errno \(errno)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw Failure("connect: errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Ends the TCP connection in both directions (the descriptor stays until deinit).
    func shutdownBothWays() { shutdown(fd, Int32(SHUT_RDWR)) }

    func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            sent += n
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until the peer closes or `timeout` passes; returns what arrived and whether it closed.
    func receiveUntilClosed(timeout: TimeInterval) -> (bytes: [UInt8], closed: Bool) {
        var received = [UInt8]()
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard poll(&poller, 1, min(remaining, 200)) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (received, true) }
            received += buffer[0..<n]
        }
        return (received, false)
    }

    /// Reads until `count` bytes arrived or `timeout` passes.
    func receive(atLeast count: Int, timeout: TimeInterval) -> [UInt8] {
        var received = [UInt8]()
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.count < count && Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return received
    }

    /// Sends an upgrade request for `path` (with extra header lines) and reads the answer's head.
    func upgrade(path: String = "/echo", headers: [String] = []) -> String {
        send("GET \(path) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + headers.map { $0 + "\r\n" }.joined() + "\r\n")
        var head = [UInt8]()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
            head += receive(atLeast: 1, timeout: 1)
        }
        return String(decoding: head, as: UTF8.self)
    }
}

/// A masked client frame. The key 0 (allowed by RFC 6455) leaves the payload as it is,
/// which is free to build for a large one.
func maskedFrame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0, key: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4]) -> [UInt8] {
    var frame: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
    if payload.count < 126 {
        frame.append(0x80 | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        frame.append(0x80 | 127)
        for i in (0..<8).reversed() { frame.append(UInt8(truncatingIfNeeded: payload.count >> (8 * i))) }
    }
    guard key != [0, 0, 0, 0] else { return frame + key + payload }
    return frame + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
}

/// The close code in a server's close frame at the start of `bytes`, if there is one.
func closeCode(in bytes: [UInt8]) -> Int? {
    // Skip any data frames before the close frame.
    var index = 0
    while index + 2 <= bytes.count {
        let opcode = bytes[index] & 0x0F
        var length = Int(bytes[index + 1] & 0x7F)
        var header = 2
        if length == 126, index + 4 <= bytes.count {
            length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            header = 4
        } else if length == 127 {
            return nil
        }
        if opcode == 0x8 {
            guard length >= 2, index + header + 2 <= bytes.count else { return length == 0 ? 1005 : nil }
            return Int(bytes[index + header]) << 8 | Int(bytes[index + header + 1])
        }
        index += header + length
    }
    return nil
}

/// The text messages in a run of unmasked server frames (short and 16-bit lengths).
func serverTexts(_ bytes: [UInt8]) -> [String] {
    var consumed = 0
    return serverTexts(bytes, consumed: &consumed)
}

/// The text messages of the complete (unmasked, unfragmented) frames in `bytes`;
/// `consumed` is where the first incomplete frame starts.
func serverTexts(_ bytes: [UInt8], consumed: inout Int) -> [String] {
    var texts = [String]()
    var index = 0
    defer { consumed = index }
    while index + 2 <= bytes.count {
        var length = Int(bytes[index + 1] & 0x7F)
        var header = 2
        if length == 126 {
            guard index + 4 <= bytes.count else { break }
            length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            header = 4
        } else if length == 127 {
            break
        }
        guard index + header + length <= bytes.count else { break }
        if bytes[index] & 0x0F == 0x1 { texts.append(String(decoding: bytes[(index + header)..<(index + header + length)], as: UTF8.self)) }
        index += header + length
    }
    return texts
}
