#if canImport(Glibc)
import Glibc
#endif

/// What per-address limits count as one client: an IPv4 address, or the network prefix of
/// an IPv6 address (`/64` by default, as operators expect: one subscriber gets a /64 and a
/// client can take any address in it, so counting exact IPv6 addresses counts nothing).
/// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is its IPv4 address.
package struct AddressGrouping: Sendable {
    /// Bits of an IPv6 address that name one client (1…128).
    package let ipv6PrefixLength: Int

    package init(ipv6PrefixLength: Int = 64) {
        self.ipv6PrefixLength = max(1, min(128, ipv6PrefixLength))
    }

    /// The group `address` (as a channel gives it: no brackets, no port) counts under.
    package func group(_ address: String) -> String {
        // IPv4 (most clients) passes through: one memchr on the address's bytes.
        let isIPv6 = address.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.baseAddress.map { memchr($0, 0x3A, utf8.count) != nil } ?? false
        } ?? address.utf8.contains(UInt8(ascii: ":"))
        guard isIPv6 else { return address }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        return withUnsafeMutableBytes(of: &bytes) { raw -> String in
            if raw.prefix(10).allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
                return "\(raw[12]).\(raw[13]).\(raw[14]).\(raw[15])"
            }
            for index in 0..<16 {
                let keep = max(0, min(8, ipv6PrefixLength - index * 8))
                raw[index] &= keep == 8 ? 0xFF : UInt8(truncatingIfNeeded: 0xFF00 >> keep)
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, raw.baseAddress, &text, socklen_t(text.count)) != nil else { return address }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/\(ipv6PrefixLength)"
        }
    }
}
