import Foundation
import LoadTesting
import ScrollModel
@testable import SyncServer
import SyncClient
import Testing
import Transport

/// The load tool's runs (`LoadRun`, its thresholds and `--max-rate` search) against a server in
/// this process, checked against the server's own counters. `LoadTests` runs the command itself
/// where a test needs its process or its printed report.
@Suite("Load runs in process", .serialized)
struct LoadRunTests {
    /// What one run measured: the report, its JSON as the command writes it, and what the
    /// thresholds say.
    struct Outcome {
        let report: LoadReport
        let json: [String: Any]
        let violations: [String]
        let progressCalls: Int
    }

    /// Connects, runs one phase at the configured rate (or the `--max-rate` search), closes.
    func load(_ node: InProcessNode, thresholds: LoadThresholds = LoadThresholds(), search: MaxRateSearch? = nil,
              _ adjust: (inout LoadConfiguration) throws -> Void) throws -> Outcome {
        var configuration = LoadConfiguration(base: try WebSocketURL(parsing: node.url))
        try adjust(&configuration)
        let run = try LoadRun(configuration, loops: 1)
        run.connect()
        var progressCalls = 0
        let report: LoadReport
        if let search {
            report = try #require(search.run(run, progress: { _ in progressCalls += 1 }), "no rate held")
        } else {
            report = run.runPhase(rate: configuration.rate) { _ in progressCalls += 1 }
        }
        run.finish()
        let json = (try? JSONSerialization.jsonObject(with: Data(report.json))) as? [String: Any] ?? [:]
        return Outcome(report: report, json: json, violations: thresholds.violations(of: report), progressCalls: progressCalls)
    }

    /// Issue 27.8: what a slow reader meets when it reads again, and conflation reaching it:
    /// with a small receive buffer, the server keeps at most 4 KiB of unsent states in the
    /// kernel, so a 2 s stop at 60 Hz (120 states) is not read back state by state.
    @Test func aSlowReaderIsToldWhatItReadBeforeTheNewestAndTheServerConflatesForIt() throws {
        let node = try InProcessNode()
        let outcome = try load(node) {
            $0.followers = 10; $0.slowReaders = 0.2; $0.pause = 2; $0.rate = 60; $0.duration = 5; $0.drain = 1
        }
        #expect(outcome.violations.isEmpty, "\(outcome.violations)")
        let slow = outcome.json["slowReaders"] as? [String: Any] ?? [:]
        let backlog = slow["statesReadBeforeNewest"] as? [String: Any] ?? [:]
        #expect((backlog["count"] as? Int ?? 0) >= 2, "each slow reader resumed at least once: \(slow)")
        #expect((backlog["max"] as? Int ?? 999) < 100, "fewer than the 120 states sent in a pause were read back: \(slow)")
        #expect((slow["skippedStates"] as? Int ?? 0) > 0, "the server conflated for the slow readers: \(slow)")
        #expect(outcome.report.table.contains("slow: states read before the newest"), "\(outcome.report.table)")
    }

    /// Issue 30.5: many rooms against a server with its default limits (60 new rooms a minute
    /// per address). From one address the rooms past the limit are refused (429); spread over
    /// loopback addresses, every connection opens, and every presenter's updates reach its room.
    @Test func manyRoomsSpreadOverSourceAddressesPastTheServersPerAddressLimit() throws {
        let node = try InProcessNode()
        let one = try load(node) {
            $0.rooms = 70; $0.followers = 1; $0.rate = 2; $0.duration = 1; $0.drain = 1; $0.roomPrefix = "one"
            $0.sources = [try SocketAddress.resolve(host: "127.0.0.1", port: 0)]
        }
        let oneConnections = one.json["connections"] as? [String: Any] ?? [:]
        #expect((oneConnections["failed"] as? Int ?? 0) >= 10, "70 rooms from one address: 10 over the limit: \(oneConnections)")
        let reasons = oneConnections["failedByReason"] as? [String: Any] ?? [:]
        #expect(reasons.keys.contains { $0.contains("429") }, "refused by the server's per-address limit (429): \(reasons)")

        let spread = try load(node, thresholds: LoadThresholds(maxLoss: 0, maxErrors: 0)) {
            $0.rooms = 120; $0.followers = 1; $0.rate = 2; $0.duration = 1; $0.drain = 1; $0.roomPrefix = "spread"
            $0.sources = LoadConfiguration.loopbackSources(rooms: 120)
        }
        #expect(spread.violations.isEmpty, "\(spread.violations)")
        let connections = spread.json["connections"] as? [String: Any] ?? [:]
        #expect(connections["open"] as? Int == 240 && connections["failed"] as? Int == 0, "\(connections)")
        let configuration = spread.json["configuration"] as? [String: Any] ?? [:]
        #expect(configuration["sources"] as? [String] == ["127.0.0.2", "127.0.0.3", "127.0.0.4"], "\(configuration)")
        #expect(spread.report.table.contains("from 3 addresses (127.0.0.2 … 127.0.0.4)"), "\(spread.report.table)")
    }

    @Test func deliveriesAgreeWithTheServersCounters() throws {
        let node = try InProcessNode { $0.rooms.conflation = false }
        let before = try metricValue("scrollsync_state_deliveries_total", port: node.port)
        let outcome = try load(node, thresholds: LoadThresholds(maxLoss: 0, maxErrors: 0)) {
            $0.rooms = 2; $0.followers = 25; $0.rate = 50; $0.duration = 2
        }
        #expect(outcome.violations.isEmpty, "\(outcome.violations)")
        let after = try metricValue("scrollsync_state_deliveries_total", port: node.port)
        let received = outcome.json["deliveriesReceived"] as? Int ?? -1
        let sent = outcome.json["updatesSent"] as? Int ?? -1
        #expect(received == outcome.json["deliveriesExpected"] as? Int, "\(outcome.json)")
        #expect(received > 0 && sent > 0)
        // The server also delivers each state to its presenter.
        #expect(Int(after - before) == received + sent, "server delivered \(after - before); load saw \(received) + \(sent) echoes")
        let table = outcome.report.table
        #expect(table.contains("staleness ms p50/p90/p99/p99.9/max") && table.contains("age of received states ms"), "\(table)")
        #expect(outcome.json["coverage"] as? Double == 1, "every follower held every update: \(outcome.json)")
        #expect(outcome.progressCalls >= 1, "progress is reported while it runs")
    }

    /// A busy-polling loop never sleeps, so its timers and queued tasks must run from the
    /// polling itself: the rate, the drain and the report all depend on them.
    @Test func busyPollingClientsSeeEveryState() throws {
        let node = try InProcessNode { $0.rooms.conflation = false }
        let outcome = try load(node, thresholds: LoadThresholds(maxLoss: 0, maxErrors: 0)) {
            $0.followers = 20; $0.rate = 40; $0.duration = 1; $0.busyPolling = true
        }
        #expect(outcome.violations.isEmpty, "\(outcome.violations)")
        let configuration = outcome.json["configuration"] as? [String: Any] ?? [:]
        #expect(configuration["busyPolling"] as? Bool == true, "\(configuration)")
        let sent = outcome.json["updatesSent"] as? Int ?? 0
        #expect(sent >= 20, "about 40 updates in 1 s: \(sent)")
        #expect(outcome.json["deliveriesReceived"] as? Int == sent * 20, "\(outcome.json)")
        #expect(outcome.report.table.contains("clients busy-polling"))
    }

    /// `--max-rate` must not call a rate sustained when the server refuses updates: here
    /// its scroll-rate limit (50 a second, a burst of 10) turns away part of every step
    /// from 80 a second up, while latency stays far inside the bound.
    @Test func maxRateStopsWhereTheServerRefusesUpdates() throws {
        let node = try InProcessNode {
            $0.limits.scrollRate = 50
            $0.limits.scrollBurst = 10
        }
        let search = MaxRateSearch(start: 20, stalenessBound: 1000)
        var verdicts = [String]()
        var configuration = LoadConfiguration(base: try WebSocketURL(parsing: node.url))
        configuration.followers = 5; configuration.duration = 1; configuration.drain = 0.5
        let run = try LoadRun(configuration, loops: 1)
        run.connect()
        let found = search.run(run, step: { verdicts.append("\($0.rate): \(search.verdict($0))") })
        run.finish()
        let report = try #require(found, "\(verdicts)")
        #expect(report.rate >= 40 && report.rate < 80, "the highest rate that held: \(report.rate) (\(verdicts))")
        #expect(report.stats.serverErrors == 0 && report.updatesRefused == 0, "the chosen step had no refusals")
        #expect(verdicts.contains { $0.contains("the server refused") }, "a step that failed says why: \(verdicts)")
    }

    @Test func aRoomLargerThanOnePassEndsOnTheNewestStateInOrder() throws {
        // One loop, 3,000 followers: states go out in passes of 1,024 members with the loop's
        // I/O between them, and newer states overtake older ones mid-pass.
        let node = try InProcessNode { $0.loops = 1; $0.limits.scrollRate = 0 }
        let outcome = try load(node, thresholds: LoadThresholds(maxErrors: 0)) {
            $0.followers = 3000; $0.rate = 120; $0.duration = 2; $0.drain = 3
        }
        #expect(outcome.violations.isEmpty, "\(outcome.violations)")
        let reach = outcome.json["reach"] as? [String: Any] ?? [:]
        #expect(reach["reachedFinalState"] as? Int == 3000, "every follower ends on the newest state: \(reach)")
        #expect(outcome.json["outOfOrder"] as? Int == 0, "no follower sees seq go back: \(outcome.json["outOfOrder"] ?? "none")")
        #expect((outcome.json["deliveriesReceived"] as? Int ?? 0) >= 3000, "\(outcome.json)")
    }

    /// Waves of clients join and leave rooms spread over two loops, while rooms emptied on
    /// one loop expire on the other: the server stays up and ends with no members and no
    /// rooms. (The race that once crashed the sweep is too narrow to hit here on purpose;
    /// `elapsedTimeNeverUnderflows` covers it.)
    @Test func waveAfterWaveAcrossTwoLoopsLeavesNothingBehind() throws {
        let node = try InProcessNode {
            $0.loops = 2; $0.rooms.roomIdleSeconds = 1; $0.limits.scrollRate = 0
        }
        for wave in 0..<3 {
            let outcome = try load(node, thresholds: LoadThresholds(maxErrors: 0)) {
                $0.rooms = 8; $0.followers = 24; $0.rate = 60; $0.duration = 1
            }
            #expect(outcome.violations.isEmpty, "wave \(wave): \(outcome.violations)")
            #expect((outcome.json["deliveriesReceived"] as? Int ?? 0) > 0, "wave \(wave): \(outcome.json)")
        }
        let rooms = { try metricValue("scrollsync_rooms{state=\"empty\"}", port: node.port) + metricValue("scrollsync_rooms{state=\"active\"}", port: node.port) }
        #expect(try eventually { try rooms() == 0 }, "empty rooms expire after 1 s")
        #expect(try metricValue("scrollsync_room_members{role=\"follower\"}", port: node.port) == 0)
        #expect(node.isRunning, "the server is still up")
    }

    /// A run in which no connection opens measured nothing: the stats say why.
    @Test func noServerMeansAFailedRunThatSaysWhy() throws {
        let port = try freePort()  // nothing listens there
        var configuration = LoadConfiguration(base: try WebSocketURL(parsing: "ws://127.0.0.1:\(port)"))
        configuration.followers = 3; configuration.duration = 1
        let run = try LoadRun(configuration, loops: 1)
        run.connect()
        run.finish()
        #expect(run.connectStats.connectionsOpened == 0)
        let summary = run.connectStats.failureSummary
        #expect(summary.contains("4× connect to 127.0.0.1:\(port) failed") && summary.contains("refused"), "\(summary)")
    }

    /// Each threshold names the value and its limit; a run within them has no violation.
    @Test func thresholdsNameWhatTheRunExceeded() throws {
        let node = try InProcessNode()
        let outcome = try load(node, thresholds: LoadThresholds(maxAgeP99: 0.0001)) {
            $0.followers = 5; $0.rate = 20; $0.duration = 1
        }
        #expect(outcome.violations.count == 1 && outcome.violations[0].hasPrefix("age p99 "), "\(outcome.violations)")
        #expect(outcome.violations[0].hasSuffix("> 0.0001 ms"), "\(outcome.violations)")
        let generous = LoadThresholds(maxLoss: 0.5, maxErrors: 10, maxAgeP99: 60_000, maxStalenessP99: 60_000, minCoverage: 0.5)
        #expect(generous.violations(of: outcome.report).isEmpty, "\(generous.violations(of: outcome.report))")
        let strict = LoadThresholds(minCoverage: 1.01)
        #expect(strict.violations(of: outcome.report).first?.hasPrefix("coverage 100.00 % < 101.00 %") == true, "\(strict.violations(of: outcome.report))")
    }

    @Test func slowReadersSkipStaleStatesAndEndOnTheNewest() throws {
        let node = try InProcessNode()
        let outcome = try load(node) {
            $0.followers = 20; $0.rate = 500; $0.duration = 3; $0.slowReaders = 0.25; $0.pause = 1
        }
        #expect(outcome.violations.isEmpty, "\(outcome.violations)")
        let slow = outcome.json["slowReaders"] as? [String: Any] ?? [:]
        #expect(slow["count"] as? Int == 5)
        #expect((slow["skippedStates"] as? Int ?? 0) > 0, "a stalled reader skips states: \(slow)")
        #expect(slow["reachedFinalState"] as? Int == 5, "and still ends on the newest: \(slow)")
        let age = slow["stateAgeMs"] as? [String: Any] ?? [:]
        #expect((age["max"] as? Double ?? 0) >= 500, "the states a stalled reader sees are stale: \(age)")
        #expect(outcome.report.table.contains("slow readers"))
    }
}
