/// Which way the view last moved, from the previous offset.
public enum Direction: String, Sendable, Hashable {
    case up, down, none
}

/// The item at the top of the driver's view and how far into it (0…1).
public struct Anchor: Sendable, Hashable {
    public var id: String
    public var fraction: Double

    public init(id: String, fraction: Double) {
        self.id = id
        self.fraction = fraction
    }
}

/// A presenter's `scroll` message: where its view is now.
public struct ScrollUpdate: Sendable, Equatable {
    public var offset: Double
    public var viewport: Double?
    public var content: Double?
    public var anchor: Anchor?
    /// The driver's own integer (e.g. a send time in ms), carried through as written.
    public var t: String?

    public init(offset: Double, viewport: Double? = nil, content: Double? = nil, anchor: Anchor? = nil, t: String? = nil) {
        self.offset = offset
        self.viewport = viewport
        self.content = content
        self.anchor = anchor
        self.t = t
    }
}

/// A room's shared scroll state (Protocol/PROTOCOL.md, "The scroll state").
public struct ScrollState: Sendable, Hashable {
    /// Strictly increasing per room.
    public var seq: Int
    public var offset: Double
    public var viewport: Double?
    public var content: Double?
    /// offset / (content − viewport), clamped to 0…1; nil when that extent is unknown or ≤ 0.
    public var progress: Double?
    public var direction: Direction
    public var anchor: Anchor?
    public var atTop: Bool
    public var atBottom: Bool
    /// The session that drove this change.
    public var by: String
    public var t: String?
    /// Fingerprint of the room's document when the state was made.
    public var doc: String?

    public init(seq: Int, offset: Double, viewport: Double?, content: Double?, progress: Double?, direction: Direction,
                anchor: Anchor?, atTop: Bool, atBottom: Bool, by: String, t: String?, doc: String?) {
        self.seq = seq
        self.offset = offset
        self.viewport = viewport
        self.content = content
        self.progress = progress
        self.direction = direction
        self.anchor = anchor
        self.atTop = atTop
        self.atBottom = atBottom
        self.by = by
        self.t = t
        self.doc = doc
    }

    /// The state that follows `previous` after `update` from `driver`. Viewport and content
    /// persist from the previous state when an update leaves them out.
    public static func next(after previous: ScrollState?, applying update: ScrollUpdate, by driver: String, doc: String?) -> ScrollState {
        let viewport = update.viewport ?? previous?.viewport
        let content = update.content ?? previous?.content
        var progress: Double?
        if let viewport, let content, content - viewport > 0 {
            progress = min(1, max(0, update.offset / (content - viewport)))
        }
        let direction: Direction = switch previous.map({ update.offset - $0.offset }) {
        case let delta? where delta > 0: .down
        case let delta? where delta < 0: .up
        default: .none
        }
        let atBottom: Bool
        if let viewport, let content { atBottom = update.offset >= content - viewport } else { atBottom = false }
        return ScrollState(
            seq: (previous?.seq ?? 0) + 1, offset: update.offset, viewport: viewport, content: content,
            progress: progress, direction: direction, anchor: update.anchor, atTop: update.offset <= 0,
            atBottom: atBottom, by: driver, t: update.t, doc: doc)
    }
}

/// A document shared by a presenter.
public struct SharedDocument: Sendable, Equatable {
    public enum Format: String, Sendable { case text, markdown }

    public var name: String
    public var format: Format
    public var text: String
    public var fingerprint: String
    public var by: String

    public init(name: String, format: Format, text: String, by: String) {
        self.name = name
        self.format = format
        self.text = text
        self.fingerprint = Fingerprint.of(text)
        self.by = by
    }
}

/// The short document fingerprint carried in `state.doc`: FNV-1a 64 of the UTF-8 text,
/// as 16 lowercase hex digits. It tells copies apart; it is not a security measure.
public enum Fingerprint {
    public static func of(_ text: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hex16(hash)
    }
}

extension ScrollState {
    /// Why this state could not have come from a valid `scroll` (offsets and extents finite
    /// and within the limits, progress and fraction within 0…1, a bounded anchor id, an
    /// integer `t`, `seq` ≥ 1), or nil. A state read back from storage is held to the same
    /// rules as one a presenter sends.
    public func problem(limits: ClientMessage.Limits = .init()) -> String? {
        guard seq >= 1 else { return "seq \(seq) is below 1" }
        for (name, value) in [("offset", offset as Double?), ("viewport", viewport), ("content", content)] {
            if let value, !(value.isFinite && value >= 0 && value <= limits.maxExtent) { return "\(name) \(value) is outside 0…\(Int(limits.maxExtent))" }
        }
        if let progress, !(progress.isFinite && (0...1).contains(progress)) { return "progress \(progress) is outside 0…1" }
        if let anchor {
            guard !anchor.id.isEmpty, anchor.id.utf8.count <= limits.maxAnchorBytes else { return "anchor id of \(anchor.id.utf8.count) bytes" }
            guard anchor.fraction.isFinite, (0...1).contains(anchor.fraction) else { return "anchor fraction \(anchor.fraction) is outside 0…1" }
        }
        if let t, Int64(t).map({ abs($0) <= 1 << 53 }) != true { return "t \(t.prefix(32)) is not an integer of at most 2^53" }
        return nil
    }
}

extension ScrollState {
    /// PROTOCOL.md §3, following a state: the receiver's top (row, pixel: its own units) for
    /// this state, where `anchorRow` is where the anchor's block puts it (`anchorRow(start:
    /// height:fraction:)`; nil when the receiver has no block with that id) and `maxTop` is
    /// the receiver's content less its viewport. atTop → 0, atBottom → `maxTop`, else the
    /// anchor's row, else progress × `maxTop`, else the offset; rounded half away from zero
    /// and clamped to 0…`maxTop`.
    public func top(anchorRow: Int?, maxTop: Int) -> Int {
        guard maxTop > 0 else { return 0 }
        if atTop { return 0 }
        if atBottom { return maxTop }
        let target: Double
        if let anchorRow {
            target = Double(anchorRow)
        } else if let progress {
            target = progress * Double(maxTop)
        } else {
            target = offset
        }
        // Clamped as a Double: a server's offset may be any finite number, and Int(1e300) traps.
        return target.isFinite ? Int(min(max(0, target.rounded(.toNearestOrAwayFromZero)), Double(maxTop))) : 0
    }

    /// Where an anchor puts the receiver's top (PROTOCOL.md §3): in its block, which starts at
    /// `start` and is `height` tall, `start + min(round(fraction × height), height − 1)`, with
    /// `fraction` taken within 0…1: the block stays at the top however it rounds.
    public static func anchorRow(start: Int, height: Int, fraction: Double) -> Int {
        let fraction = fraction.isFinite ? min(1, max(0, fraction)) : 0
        let offset = (fraction * Double(height)).rounded(.toNearestOrAwayFromZero)
        return start + min(Int(offset), max(0, height - 1))
    }
}
