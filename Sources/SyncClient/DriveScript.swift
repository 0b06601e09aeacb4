/// A `scrollsync drive` script: one command per line, `#` starts a comment.
///
///     scroll OFFSET                 go to an offset
///     by DELTA                      move by a (signed) amount
///     goto ID [FRACTION]            put block ID (FRACTION of the way in) at the top
///     sweep FROM TO DURATION [HZ]   scroll from FROM to TO over DURATION at HZ (default 60)
///     sleep DURATION                wait (durations: 500ms, 2s, 1.5s, 1m)
///     share FILE                    share a document (.md is Markdown)
///     take | release                take or release control
///     expect followers OP N         wait until the follower count satisfies OP (>=, >, ==, <=, <)
public struct DriveScript: Sendable, Equatable {
    public enum Command: Sendable, Equatable {
        case scroll(Double)
        case by(Double)
        case goto(id: String, fraction: Double)
        case sweep(from: Double, to: Double, seconds: Double, hz: Double)
        case sleep(Double)
        case share(path: String)
        case take
        case release
        case expectFollowers(Comparison, Int)
    }

    public enum Comparison: String, Sendable, Equatable, CaseIterable {
        case atLeast = ">=", more = ">", exactly = "==", atMost = "<=", fewer = "<"

        public func holds(_ value: Int, _ bound: Int) -> Bool {
            switch self {
            case .atLeast: value >= bound
            case .more: value > bound
            case .exactly: value == bound
            case .atMost: value <= bound
            case .fewer: value < bound
            }
        }
    }

    public struct Line: Sendable, Equatable {
        public var number: Int
        public var command: Command
    }

    /// A script error, naming its line.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public var lines: [Line]

    public init(_ text: String) throws(ParseError) {
        var lines = [Line]()
        for (index, raw) in Self.lines(of: text).enumerated() {
            let lineNumber = index + 1
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            guard let name = words.first else { continue }
            let arguments = Array(words.dropFirst())
            func fail(_ message: String) -> ParseError { ParseError(line: lineNumber, message: message) }
            func count(_ range: ClosedRange<Int>, _ usage: String) throws(ParseError) {
                guard range.contains(arguments.count) else { throw fail("usage: \(usage)") }
            }
            func number(_ text: String, _ what: String) throws(ParseError) -> Double {
                guard let value = Double(text), value.isFinite else { throw fail("\(what) must be a number, not '\(text)'") }
                return value
            }
            func offset(_ text: String) throws(ParseError) -> Double {
                let value = try number(text, "an offset")
                guard value >= 0 else { throw fail("an offset must be 0 or more, not \(text)") }
                return value
            }
            let command: Command
            switch name.lowercased() {
            case "scroll":
                try count(1...1, "scroll OFFSET")
                command = .scroll(try offset(arguments[0]))
            case "by":
                try count(1...1, "by DELTA")
                command = .by(try number(arguments[0], "a delta"))
            case "goto":
                try count(1...2, "goto ID [FRACTION]")
                let fraction = arguments.count > 1 ? try number(arguments[1], "a fraction") : 0
                guard (0...1).contains(fraction) else { throw fail("a fraction must be from 0 to 1, not \(arguments[1])") }
                command = .goto(id: arguments[0], fraction: fraction)
            case "sweep":
                try count(3...4, "sweep FROM TO DURATION [HZ]")
                let hz = arguments.count > 3 ? try number(arguments[3], "a rate") : 60
                guard hz > 0 && hz <= 1000 else { throw fail("a rate must be above 0 and at most 1000 Hz") }
                guard let seconds = Self.duration(arguments[2]) else { throw fail("not a duration: '\(arguments[2])' (e.g. 500ms, 2s, 1m)") }
                guard seconds <= Self.longestDuration else { throw fail("a duration is at most 24 h, not \(arguments[2])") }
                command = .sweep(from: try offset(arguments[0]), to: try offset(arguments[1]), seconds: seconds, hz: hz)
            case "sleep":
                try count(1...1, "sleep DURATION")
                guard let seconds = Self.duration(arguments[0]) else { throw fail("not a duration: '\(arguments[0])' (e.g. 500ms, 2s, 1m)") }
                guard seconds <= Self.longestDuration else { throw fail("a duration is at most 24 h, not \(arguments[0])") }
                command = .sleep(seconds)
            case "share":
                try count(1...1, "share FILE")
                command = .share(path: arguments[0])
            case "take":
                try count(0...0, "take")
                command = .take
            case "release":
                try count(0...0, "release")
                command = .release
            case "expect":
                try count(3...3, "expect followers OP N")
                guard arguments[0] == "followers" else { throw fail("only 'expect followers OP N' is known, not '\(arguments[0])'") }
                guard let comparison = Comparison(rawValue: arguments[1]) else {
                    throw fail("unknown comparison '\(arguments[1])'; use one of >= > == <= <")
                }
                guard let bound = Int(arguments[2]), bound >= 0 else { throw fail("a count must be a whole number, not '\(arguments[2])'") }
                command = .expectFollowers(comparison, bound)
            default:
                throw fail("unknown command '\(name)'")
            }
            lines.append(Line(number: lineNumber, command: command))
        }
        self.lines = lines
    }

    /// The lines of a script, ended by LF or CRLF (a CRLF is one Character to Swift, so
    /// splitting at "\n" alone would run a Windows file into one line).
    public static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
    }

    /// The longest `sleep` or `sweep`: a day (a script that waits longer is a mistake).
    public static let longestDuration = 86_400.0

    /// `500ms`, `2s`, `1.5s`, `1m`, or a bare number of seconds.
    public static func duration(_ text: String) -> Double? {
        let (digits, scale): (Substring, Double) =
            text.hasSuffix("ms") ? (text.dropLast(2), 0.001) :
            text.hasSuffix("s") ? (text.dropLast(1), 1) :
            text.hasSuffix("m") ? (text.dropLast(1), 60) : (Substring(text), 1)
        guard let value = Double(digits), value.isFinite, value >= 0 else { return nil }
        return value * scale
    }
}
