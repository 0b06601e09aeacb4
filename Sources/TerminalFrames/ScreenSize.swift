/// The size of a terminal a frame is rendered for, within what a server renders: 20–400
/// columns and 5–200 rows (smaller is no view, larger is no screen; each frame of the largest
/// is about 100 KB). 80×24 when a reader gives none: the size every terminal starts at.
public struct ScreenSize: Hashable, Sendable, CustomStringConvertible {
    public let columns: Int
    public let rows: Int

    public static let columnRange = 20...400
    public static let rowRange = 5...200
    public static let standard = ScreenSize(columns: 80, rows: 24)
    /// The smallest size, which a room always has room for (`SizeTable`).
    public static let smallest = ScreenSize(columns: columnRange.lowerBound, rows: rowRange.lowerBound)

    /// A size within the ranges: a value outside one is moved to its nearest end.
    public init(columns: Int, rows: Int) {
        self.columns = min(max(columns, Self.columnRange.lowerBound), Self.columnRange.upperBound)
        self.rows = min(max(rows, Self.rowRange.lowerBound), Self.rowRange.upperBound)
    }

    /// Why a size given as text is not one.
    public struct Malformed: Error, Equatable {
        public let message: String
    }

    /// The size a reader asks for with `cols=` and `rows=` (either may be left out: 80 and 24),
    /// clamped to the ranges; text that is not a whole number is refused, saying which.
    public static func parse(columns: String?, rows: String?) -> Result<ScreenSize, Malformed> {
        func number(_ text: String?, _ name: String, _ fallback: Int, _ range: ClosedRange<Int>) -> Result<Int, Malformed> {
            guard let text else { return .success(fallback) }
            // Digits only; however many, a number past the range is clamped like any other (a
            // 7-digit one was refused as "not a whole number"). No text is echoed long.
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                let shown = String(text.unicodeScalars.prefix(16).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
                return .failure(Malformed(message: "\(name) must be a whole number (kept within \(range.lowerBound)–\(range.upperBound)), not \"\(shown)\""))
            }
            return .success(Int(text) ?? range.upperBound)
        }
        return number(columns, "cols", standard.columns, columnRange).flatMap { width in
            number(rows, "rows", standard.rows, rowRange).map { height in ScreenSize(columns: width, rows: height) }
        }
    }

    public var description: String { "\(columns)x\(rows)" }
}

/// The distinct sizes a room renders, each with its readers: at most `limit`, so a room costs
/// at most `limit` renders per state whatever sizes its readers ask for. A reader whose size
/// is not in a full table gets the largest size in it that fits inside its own (the nearest
/// smaller); when none fits, the smallest size, which is always allowed (so `limit + 1` at most).
public struct SizeTable: Sendable {
    public let limit: Int
    public private(set) var readers: [ScreenSize: Int] = [:]

    public init(limit: Int) { self.limit = max(1, limit) }

    /// The size a reader asking for `wanted` is given; counts it there.
    public mutating func add(_ wanted: ScreenSize) -> ScreenSize {
        let size = choose(wanted)
        readers[size, default: 0] += 1
        return size
    }

    /// A reader of `size` (as `add` gave it) left.
    public mutating func remove(_ size: ScreenSize) {
        guard let count = readers[size] else { return }
        readers[size] = count > 1 ? count - 1 : nil
    }

    func choose(_ wanted: ScreenSize) -> ScreenSize {
        if readers[wanted] != nil || readers.count < limit { return wanted }
        let fitting = readers.keys.filter { $0.columns <= wanted.columns && $0.rows <= wanted.rows }
        return fitting.max { ($0.columns * $0.rows, $0.columns) < ($1.columns * $1.rows, $1.columns) } ?? .smallest
    }
}
