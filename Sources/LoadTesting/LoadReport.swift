import Histogram
import ScrollModel

/// The outcome of one load phase: a readable table and a machine-readable JSON report.
public struct LoadReport: Sendable {
    public let configuration: LoadConfiguration
    public let rate: Double
    public let sendingSeconds: Double
    public let stats: LoadStats
    /// Accepted updates × followers connected, per room, summed.
    public let expectedDeliveries: Int
    /// Updates sent in the phase × followers of their room, summed: the pairs coverage is of.
    public let statePairs: Int
    public let reach: Reach
    public let cpuSeconds: Double
    /// Seconds to open every connection (ramp-up included).
    public let connectSeconds: Double
    public var handshakesPerSecond: Double { connectSeconds > 0 ? Double(stats.connectionsOpened) / connectSeconds : 0 }

    public var failedConnections: Int { stats.failures.values.reduce(0, +) }
    public var attemptedConnections: Int { configuration.connections }
    /// The share of (update, follower) pairs never covered: the follower never came to hold
    /// that update or a newer one. States the server skipped on purpose (conflation) are not
    /// lost: a newer state covers them (they are counted apart, `skippedStates`).
    public var loss: Double { statePairs > 0 ? 1 - coverage : 0 }
    /// Updates the room turned into states (its `seq` advanced by them), and those it did not
    /// (a scroll-rate limit conflated them away on the presenter's side).
    public let updatesAccepted: Int
    public var updatesRefused: Int { max(0, stats.updatesSent - updatesAccepted) }
    /// States received per second while sending (the drain's are not in it).
    public var deliveriesPerSecond: Double { sendingSeconds > 0 ? Double(stats.deliveries) / sendingSeconds : 0 }
    /// The share of (update, follower) pairs in which the follower came to hold that update
    /// or a newer one, by the end of the drain.
    public var coverage: Double { statePairs > 0 ? Double(stats.coveredPairs) / Double(statePairs) : 0 }
    /// Milliseconds at the given percentile of staleness (update sent → follower holds it or newer).
    public func stalenessMs(_ p: Double) -> Double { percentile(stats.staleness, p) }
    public var updatesPerSecond: Double { sendingSeconds > 0 ? Double(stats.updatesSent) / sendingSeconds : 0 }

    func percentile(_ histogram: Histogram<UInt64>, _ p: Double) -> Double {
        histogram.totalCount > 0 ? Double(histogram.valueAtPercentile(p)) / 1000 : 0
    }


    /// Milliseconds at the given percentile of the age of received states (a state's `t` to
    /// its arrival at a follower).
    public func ageMs(_ p: Double) -> Double { percentile(stats.latency, p) }

    /// The report as a table for people.
    public var table: String {
        var rows: [(String, String)] = [
            ("rate", inFlightText),
            ("connections", "\(stats.connectionsOpened) open of \(attemptedConnections), \(failedConnections) failed" + failureText),
            ("handshake ms p50/p99", "\(format(percentile(stats.handshake, 50))) / \(format(percentile(stats.handshake, 99)))"
                + ", all \(stats.failures.isEmpty ? "open" : "open or failed") in \(format(connectSeconds)) s (\(format(handshakesPerSecond))/s)"),
            ("updates sent / accepted / refused", "\(stats.updatesSent) (\(format(updatesPerSecond))/s) / \(updatesAccepted) / \(updatesRefused)"
                + (updatesRefused > 0 ? " (the server's scroll-rate limit)" : "")),
            ("staleness ms p50/p90/p99/p99.9/max", [50, 90, 99, 99.9].map { format(stalenessMs($0)) }.joined(separator: " / ")
                + " / " + format(Double(stats.staleness.max) / 1000)),
            ("coverage", "\(format(coverage * 100))% of \(statePairs) (update, follower) pairs"),
            ("deliveries", "\(stats.deliveries) while sending (\(format(deliveriesPerSecond))/s) + \(stats.drainDeliveries) in the drain, of \(expectedDeliveries) expected"),
            ("loss", "\(format(loss * 100)) % of (update, follower) pairs never covered"),
            ("skipped states", "\(stats.skipped) (conflated on purpose: a newer state covered each)"),
            ("out of order", "\(stats.outOfOrder)"),
            ("age of received states ms p50/p90/p99/p99.9/max", [50, 90, 99, 99.9].map { format(ageMs($0)) }.joined(separator: " / ")
                + " / " + format(Double(stats.latency.max) / 1000)),
            ("reached final state", "\(reach.reached) of \(reach.followers) followers"),
            ("server errors", "\(stats.serverErrors)"),
            ("cpu seconds (load tool)", format(cpuSeconds)),
        ]
        if reach.slowFollowers > 0 {
            rows += [
                ("slow readers", "\(reach.slowFollowers): \(stats.slowDeliveries) states seen, \(stats.slowSkipped) skipped"),
                ("slow: state age ms p50/p99/max", [50, 99].map { format(percentile(stats.slowStaleness, $0)) }.joined(separator: " / ")
                    + " / " + format(Double(stats.slowStaleness.max) / 1000)),
                ("slow: after a pause, ms to the newest p50/p99/max", [50, 99].map { format(percentile(stats.slowCatchUp, $0)) }.joined(separator: " / ")
                    + " / " + format(Double(stats.slowCatchUp.max) / 1000)),
                ("slow: states read before the newest p50/max", "\(stats.slowBacklog.totalCount > 0 ? stats.slowBacklog.valueAtPercentile(50) : 0) / \(stats.slowBacklog.max)"),
                ("slow: reached final state", "\(reach.slowReached) of \(reach.slowFollowers)"),
            ]
        }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0 + String(repeating: " ", count: width - $0.0.count) + "  " + $0.1 }.joined(separator: "\n")
    }

    private var inFlightText: String {
        let polling = configuration.busyPolling ? ", clients busy-polling" : ""
        if let window = configuration.inFlight { return "\(window) updates in flight per presenter" + polling }
        if let trace = configuration.trace {
            return "trace \(trace.name) at ×\(format(trace.speed)) (\(trace.moves.count) moves a pass of \(format(trace.duration)) s), \(configuration.rooms) room(s) × \(configuration.followers) followers" + sourcesText + polling
        }
        return "\(format(rate)) updates/s per presenter (rooms at spread phases), \(configuration.rooms) room(s) × \(configuration.followers) followers"
            + sourcesText + polling
    }

    /// Where the connections came from, when spread over several local addresses.
    private var sourcesText: String {
        guard let first = configuration.sources.first, let last = configuration.sources.last else { return "" }
        return configuration.sources.count == 1 ? ", from \(first.numericHost)"
            : ", from \(configuration.sources.count) addresses (\(first.numericHost) … \(last.numericHost))"
    }

    private var failureText: String {
        stats.failures.isEmpty ? "" : " (" + stats.failureSummary + ")"
    }

    /// The report as JSON.
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 2048)
        w.beginObject()
        w.key("configuration")
        w.beginObject()
        w.field("url", configuration.base.description)
        w.field("rooms", configuration.rooms)
        w.field("followersPerRoom", configuration.followers)
        w.field("rate", rate)
        w.key("inFlight")
        if let window = configuration.inFlight { w.int(window) } else { w.null() }
        w.key("trace")
        if let trace = configuration.trace {
            w.beginObject()
            w.field("file", trace.name)
            w.field("speed", trace.speed)
            w.field("moves", trace.moves.count)
            w.field("passSeconds", trace.duration)
            w.endObject()
        } else {
            w.null()
        }
        w.key("sources")
        w.beginArray()
        for source in configuration.sources { w.string(source.numericHost) }
        w.endArray()
        w.field("durationSeconds", configuration.duration)
        w.field("rampUpSeconds", configuration.rampUp)
        w.field("compress", configuration.compress)
        w.field("slowReaders", configuration.slowReaders)
        w.field("pauseSeconds", configuration.pause)
        w.field("busyPolling", configuration.busyPolling)
        w.endObject()
        w.key("connections")
        w.beginObject()
        w.field("attempted", attemptedConnections)
        w.field("open", stats.connectionsOpened)
        w.field("failed", failedConnections)
        w.key("failedByReason")
        w.beginObject()
        for (reason, count) in stats.failures.sorted(by: { $0.key < $1.key }) { w.key(text: reason); w.int(count) }
        w.endObject()
        w.key("handshakeMs")
        percentiles(stats.handshake, into: &w)
        w.field("connectSeconds", connectSeconds)
        w.field("handshakesPerSecond", handshakesPerSecond)
        w.endObject()
        w.field("updatesSent", stats.updatesSent)
        w.field("updatesAccepted", updatesAccepted)
        w.field("updatesRefused", updatesRefused)
        w.field("updatesPerSecond", updatesPerSecond)
        w.field("deliveriesExpected", expectedDeliveries)
        w.field("deliveriesReceived", stats.deliveries + stats.drainDeliveries)
        w.field("deliveriesWhileSending", stats.deliveries)
        w.field("deliveriesInDrain", stats.drainDeliveries)
        w.field("deliveriesPerSecond", deliveriesPerSecond)
        w.field("statePairs", statePairs)
        w.field("coveredPairs", stats.coveredPairs)
        w.field("coverage", coverage)
        w.key("stalenessMs")
        percentiles(stats.staleness, into: &w)
        w.field("loss", loss)
        w.field("outOfOrder", stats.outOfOrder)
        w.field("skippedStates", stats.skipped)
        w.key("ageMs")
        percentiles(stats.latency, into: &w)
        w.key("reach")
        w.beginObject()
        w.field("followers", reach.followers)
        w.field("reachedFinalState", reach.reached)
        w.endObject()
        w.key("slowReaders")
        w.beginObject()
        w.field("count", reach.slowFollowers)
        w.field("statesSeen", stats.slowDeliveries)
        w.field("skippedStates", stats.slowSkipped)
        w.field("reachedFinalState", reach.slowReached)
        w.key("stateAgeMs")
        percentiles(stats.slowStaleness, into: &w)
        w.key("catchUpMs")
        percentiles(stats.slowCatchUp, into: &w)
        w.key("statesReadBeforeNewest")
        w.beginObject()
        w.field("p50", Int(stats.slowBacklog.totalCount > 0 ? stats.slowBacklog.valueAtPercentile(50) : 0))
        w.field("max", Int(stats.slowBacklog.max))
        w.field("count", Int(stats.slowBacklog.totalCount))
        w.endObject()
        w.endObject()
        w.field("serverErrors", stats.serverErrors)
        w.field("cpuSeconds", cpuSeconds)
        w.endObject()
        return w.bytes
    }

    private func percentiles(_ histogram: Histogram<UInt64>, into w: inout JSONWriter) {
        w.beginObject()
        for (name, p) in [("p50", 50.0), ("p90", 90), ("p99", 99), ("p99.9", 99.9)] { w.key(text: name); w.double(percentile(histogram, p)) }
        w.field("max", Double(histogram.max) / 1000)
        w.field("count", Int(histogram.totalCount))
        w.endObject()
    }
}

private func format(_ value: Double) -> String {
    if value < 0 { return "-" + format(-value) }
    if value >= 100 { return String(Int(value.rounded())) }
    let hundredths = Int((value * 100).rounded())
    let fraction = hundredths % 100
    return "\(hundredths / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
}
