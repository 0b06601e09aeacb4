#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how the service is doing (`Type=notify`): one datagram per message to the
/// socket named by `$NOTIFY_SOCKET` (sd_notify(3)'s protocol, without libsystemd): `READY=1`
/// once listening, `RELOADING=1` while reloading, `STOPPING=1` when draining.
struct SystemdNotifier {
    private let path: [UInt8]

    /// Nil when systemd (or a test) did not ask: `$NOTIFY_SOCKET` unset, empty or too long.
    init?(environment: [String: String] = ProcessEnvironment.all) {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return nil }
        var path = Array(name.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        guard path.first == UInt8(ascii: "/") || path.first == 0,
              path.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
        self.path = path
    }

    /// Sends `message` (lines of `KEY=VALUE`); false when it could not be sent.
    @discardableResult
    func send(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, length)
            }
        }
        return sent == bytes.count
    }
}
