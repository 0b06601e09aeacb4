/// Which master of a Redis Cluster serves which hash slot, read from `CLUSTER SLOTS`.
///
/// A key's slot is CRC16 (XMODEM) of the key, or of its hash tag (what is between the first
/// `{` and the next `}`, if not empty), modulo 16,384, as Redis computes it. The reply is
/// checked as any input a node reads from Redis: slot ranges within 0…16,383, hosts of at most
/// 255 bytes of printable ASCII, ports 1…65,535, at most `maxNodes` masters; a reply that fails
/// is refused whole (the old map stays).
public struct RedisClusterMap: Sendable, Equatable {
    public struct Node: Hashable, Sendable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        public var description: String { "\(host):\(port)" }
    }

    public static let slotCount = 16_384
    /// More masters than any cluster runs (Redis recommends at most 1,000 nodes).
    public static let maxNodes = 1_000
    static let unassigned = UInt16.max

    /// The masters, in the order the reply named them.
    public private(set) var masters: [Node] = []
    /// Replicas, as further nodes to ask when the masters cannot be reached.
    public private(set) var replicas: [Node] = []
    /// Each slot's master, as an index into `masters` (`unassigned` if none serves it).
    private var owners = [UInt16](repeating: RedisClusterMap.unassigned, count: RedisClusterMap.slotCount)

    /// Whether every slot has a master.
    public private(set) var isComplete = false

    /// The master that serves `slot`, if any.
    public func master(ofSlot slot: Int) -> Int? {
        let owner = owners[slot]
        return owner == Self.unassigned ? nil : Int(owner)
    }

    /// Reads a `CLUSTER SLOTS` reply; `askedHost` stands for a node the reply names with an
    /// empty host (the node that answered, by Redis's convention).
    public init(slotsReply reply: RedisReply, askedHost: String) throws(RedisError) {
        guard case .array(let ranges) = reply else { throw RedisError("CLUSTER SLOTS: not an array") }
        var index = [Node: Int]()
        for range in ranges {
            let parts = range.elements
            guard parts.count >= 3, let first = parts[0].integer, let last = parts[1].integer,
                  0 <= first, first <= last, last < Self.slotCount else {
                throw RedisError("CLUSTER SLOTS: a slot range is not within 0…16383")
            }
            let master = try Self.node(parts[2], askedHost: askedHost)
            let position: Int
            if let known = index[master] {
                position = known
            } else {
                guard masters.count < Self.maxNodes else { throw RedisError("CLUSTER SLOTS: more than \(Self.maxNodes) masters") }
                position = masters.count
                index[master] = position
                masters.append(master)
            }
            for slot in first...last { owners[slot] = UInt16(position) }
            for replica in parts.dropFirst(3) {
                let node = try Self.node(replica, askedHost: askedHost)
                if !replicas.contains(node) && replicas.count < Self.maxNodes { replicas.append(node) }
            }
        }
        isComplete = !owners.contains(Self.unassigned)
    }

    private static func node(_ reply: RedisReply, askedHost: String) throws(RedisError) -> Node {
        let parts = reply.elements
        guard parts.count >= 2, let host = parts[0].text, let port = parts[1].integer, (1...65_535).contains(port) else {
            throw RedisError("CLUSTER SLOTS: a node without a host and port")
        }
        let name = host.isEmpty ? askedHost : host
        guard !name.isEmpty, name != "?", name.utf8.count <= 255, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw RedisError("CLUSTER SLOTS: a host that is not a name or address")
        }
        return Node(host: name, port: port)
    }

    /// The hash slot of `key`, as Redis Cluster computes it.
    public static func slot(of key: some StringProtocol) -> Int {
        var bytes = Array(key.utf8)[...]
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
           let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
            bytes = bytes[(open + 1)..<close]
        }
        return Int(crc16(bytes) % UInt16(slotCount))
    }

    /// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), Redis Cluster's key hash.
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        bytes.reduce(0) { crc, byte in (crc << 8) ^ crcTable[Int(UInt8(crc >> 8) ^ byte)] }
    }

    /// The CRC of each byte value, a byte at a time.
    private static let crcTable: [UInt16] = (0..<256).map { value in
        var crc = UInt16(value) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
