import ScrollModel

/// The limits a load run must stay within (`scrollsync load --max-…`), for a CI gate.
public struct LoadThresholds: Sendable {
    /// The fraction of (update, follower) pairs never covered.
    public var maxLoss: Double?
    /// Failed connections plus errors the server sent.
    public var maxErrors: Int?
    public var maxAgeP99: Double?
    public var maxStalenessP99: Double?
    /// The fraction of (update, follower) pairs followers came to hold.
    public var minCoverage: Double?

    public init(maxLoss: Double? = nil, maxErrors: Int? = nil, maxAgeP99: Double? = nil, maxStalenessP99: Double? = nil, minCoverage: Double? = nil) {
        self.maxLoss = maxLoss
        self.maxErrors = maxErrors
        self.maxAgeP99 = maxAgeP99
        self.maxStalenessP99 = maxStalenessP99
        self.minCoverage = minCoverage
    }

    /// One threshold against what the run measured.
    public struct Check: Sendable, Equatable {
        /// The option's name without `--`, e.g. `max-loss`; `in-order` for the order check every run has.
        public let name: String
        public let limit: Double
        public let measured: Double
        public let passed: Bool
        /// How it reads in a message: `loss 0.79 % > 0.50 %`.
        public let text: String
    }

    /// Every threshold given (and the order check every run has), each with its limit, the
    /// value measured and whether it passed.
    public func checks(of report: LoadReport) -> [Check] {
        var checks = [Check]()
        func check(_ name: String, _ limit: Double, _ measured: Double, passed: Bool, _ text: String) {
            checks.append(Check(name: name, limit: limit, measured: measured, passed: passed, text: text))
        }
        if let maxLoss {
            check("max-loss", maxLoss, report.loss, passed: report.loss <= maxLoss, "loss \(percent(report.loss)) > \(percent(maxLoss))")
        }
        let errors = report.failedConnections + report.stats.serverErrors
        if let maxErrors { check("max-errors", Double(maxErrors), Double(errors), passed: errors <= maxErrors, "errors \(errors) > \(maxErrors)") }
        if let maxAgeP99 {
            check("max-age-p99", maxAgeP99, report.ageMs(99), passed: report.ageMs(99) <= maxAgeP99, "age p99 \(report.ageMs(99)) ms > \(maxAgeP99) ms")
        }
        if let maxStalenessP99 {
            check("max-staleness-p99", maxStalenessP99, report.stalenessMs(99), passed: report.stalenessMs(99) <= maxStalenessP99,
                  "staleness p99 \(report.stalenessMs(99)) ms > \(maxStalenessP99) ms")
        }
        if let minCoverage {
            check("min-coverage", minCoverage, report.coverage, passed: report.coverage >= minCoverage,
                  "coverage \(percent(report.coverage)) < \(percent(minCoverage))")
        }
        check("in-order", 0, Double(report.stats.outOfOrder), passed: report.stats.outOfOrder == 0, "\(report.stats.outOfOrder) states out of order")
        return checks
    }

    /// What the report exceeds, each said with its value and limit; empty when it passes.
    /// States seen out of order always fail a run.
    public func violations(of report: LoadReport) -> [String] {
        checks(of: report).filter { !$0.passed }.map(\.text)
    }

    /// The checks as the report's `gate` object: `{"passed":…,"checks":[{"name","limit","measured","passed"}]}`.
    public func gateJSON(_ report: LoadReport) -> [UInt8] {
        let checks = checks(of: report)
        var w = JSONWriter(capacity: 512)
        w.beginObject()
        w.field("passed", checks.allSatisfy(\.passed))
        w.key("checks")
        w.beginArray()
        for check in checks {
            w.beginObject()
            w.field("name", check.name)
            w.field("limit", check.limit)
            w.field("measured", check.measured)
            w.field("passed", check.passed)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}

/// `scrollsync load --max-rate`: the highest rate per presenter that holds. Doubles the rate
/// while it holds, then bisects once between the last good and the first bad rate. A rate
/// holds when the presenters kept it up, the room turned every one of their updates into a
/// state (none refused, e.g. by its scroll-rate limit, and no error), every follower ended on
/// the newest state, and staleness p99 stayed within the bound.
public struct MaxRateSearch: Sendable {
    /// Staleness p99 a rate must stay within, in ms.
    public var stalenessBound: Double
    /// The first rate tried.
    public var start: Double

    public init(start: Double, stalenessBound: Double) {
        self.start = start
        self.stalenessBound = stalenessBound
    }

    public func holds(_ report: LoadReport) -> Bool {
        report.stalenessMs(99) <= stalenessBound && report.reach.reached == report.reach.followers
            && report.updatesPerSecond >= 0.9 * report.rate * Double(report.configuration.rooms)
            && report.stats.serverErrors == 0 && report.updatesRefused == 0
    }

    /// Why a step holds or not, for its log line.
    public func verdict(_ report: LoadReport) -> String {
        if holds(report) { return "holds" }
        if report.updatesRefused > 0 || report.stats.serverErrors > 0 {
            return "does not hold (the server refused \(report.updatesRefused) of \(report.stats.updatesSent) updates, \(report.stats.serverErrors) errors)"
        }
        if report.stalenessMs(99) > stalenessBound { return "does not hold (staleness p99 over \(stalenessBound) ms)" }
        return "does not hold"
    }

    /// Runs the steps on `load`; each step's report goes to `step`. The report of the highest
    /// rate that held, or nil when even the first did not.
    public func run(_ load: LoadRun, progress: (LoadProgress) -> Void = { _ in }, step: (LoadReport) -> Void = { _ in }) -> LoadReport? {
        var good: LoadReport?
        var candidate = start
        var bad: Double?
        while bad == nil && candidate <= 1_000_000 {
            let report = load.runPhase(rate: candidate, progress: progress)
            step(report)
            if holds(report) { good = report; candidate *= 2 } else { bad = candidate }
        }
        if let bad, let last = good {
            let report = load.runPhase(rate: (last.rate + bad) / 2, progress: progress)
            step(report)
            if holds(report) { good = report }
        }
        return good
    }
}

/// A fraction as a percentage for messages: 0.0079 → "0.79 %".
public func percent(_ fraction: Double) -> String {
    let hundredths = Int((fraction * 10_000).rounded())
    return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100) %"
}
