import Foundation
import ScrollModel
import Testing

/// `scrollsync load` against a real server, checked against the server's own counters.
@Suite("scrollsync load", .serialized)
struct LoadTests {
    func metric(_ name: String, port: Int) throws -> Int {
        let client = try RawClient(port: port)
        client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        let text = String(decoding: client.receiveUntilClosed(timeout: 5).bytes, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }), let value = Int(line.split(separator: " ")[1]) else {
            throw Failure("no \(name) in \(text)")
        }
        return value
    }

    func load(_ server: ServerProcess, _ arguments: [String]) throws -> (status: Int32, output: String, report: [String: Any]) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("load-\(UUID().uuidString).json")
        let result = try run(ServerProcess.binary.path, ["load", server.url, "--json", file.path, "--loops", "1"] + arguments, timeout: 120)
        let data = (try? Data(contentsOf: file)) ?? Data()
        let report = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return (result.status, result.output, report)
    }

    /// Issue 27.6: loss means (update, follower) pairs never covered, so the README's CI gate
    /// passes on a healthy, conflating server; skipped states are reported apart.
    @Test func theReadmesCIGatePassesOnAHealthyConflatingServer() throws {
        let server = try ServerProcess()
        // The README's own line, run as written (with this server's URL and its own JSON file).
        let readme = try String(contentsOf: ConfigurationTests.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let line = try #require(readme.split(separator: "\n").first { $0.hasPrefix("scrollsync load ") && $0.contains("# a CI gate") })
        let words = line.split(separator: "#")[0].split(separator: " ").map(String.init)
        #expect(words.prefix(2) == ["scrollsync", "load"] && words[2].hasPrefix("ws://"))
        var arguments = Array(words.dropFirst(3)).filter { $0 != "--json" && $0 != "report.json" }
        #expect(arguments.contains("--max-loss"), "\(line)")
        // Loss and errors stay strict; a latency threshold is what a busy machine (this one, with
        // other tests on both cores) cannot promise, so it is checked to close the gate below
        // rather than met here (issue 47.9).
        for latency in ["--max-staleness-p99", "--max-age-p99"] {
            if let index = arguments.firstIndex(of: latency), index + 1 < arguments.count { arguments.removeSubrange(index...(index + 1)) }
        }
        let (status, output, report) = try load(server, arguments + ["--followers", "200", "--rate", "500", "--duration", "2", "--max-errors", "0"])
        #expect(status == 0, "\(output)")
        #expect(report["loss"] as? Double == 0 && report["coverage"] as? Double == 1, "\(report)")
        #expect(output.contains("skipped states") && output.contains("loss"), "\(output)")
        #expect(output.contains("staleness p99") && output.contains("age p99"), "the progress line names both numbers")
        // Issue 47.4: the verdict is in the report and said on a pass.
        let gate = report["gate"] as? [String: Any]
        let checks = (gate?["checks"] as? [[String: Any]]) ?? []
        #expect(gate?["passed"] as? Bool == true, "\(String(describing: gate))")
        #expect(checks.contains { $0["name"] as? String == "max-loss" && $0["limit"] as? Double == 0 && $0["measured"] as? Double == 0
            && $0["passed"] as? Bool == true }, "\(checks)")
        #expect(output.contains("thresholds met: max-loss 0 within 0"), "\(output)")

        // The gate closes: a threshold the run exceeds is named, with exit status 1.
        let (failed, failure, failedReport) = try load(server, ["--followers", "5", "--rate", "20", "--duration", "1", "--max-age-p99", "0.0001"])
        #expect(failed == 1, "\(failure)")
        #expect(failure.contains("thresholds exceeded: age p99"), "\(failure)")
        let failedGate = failedReport["gate"] as? [String: Any]
        #expect(failedGate?["passed"] as? Bool == false)
        #expect(((failedGate?["checks"] as? [[String: Any]]) ?? []).contains {
            $0["name"] as? String == "max-age-p99" && $0["passed"] as? Bool == false && ($0["measured"] as? Double ?? 0) > 0.0001
        }, "the failed threshold, its limit and what was measured: \(String(describing: failedGate))")
        // And a run that opened no connection measured nothing: it fails, saying why.
        let port = try freePort()  // nothing listens there
        let none = try run(ServerProcess.binary.path, ["load", "ws://127.0.0.1:\(port)", "--followers", "3", "--duration", "1"], timeout: 60)
        #expect(none.status == 1 && none.output.contains("no connection opened: 4× connect to 127.0.0.1:\(port) failed"), "\(none.output)")
    }

    /// Stops the server for a second once states flow (not while clients connect).
    func stopForASecond(_ server: ServerProcess) -> Thread {
        let pid = server.pid
        let port = server.port
        let stopper = Thread { [self] in
            for _ in 0..<200 where ((try? metric("scrollsync_state_deliveries_total", port: port)) ?? 0) < 100 { usleep(50_000) }
            usleep(300_000)
            kill(pid, SIGSTOP)
            usleep(1_000_000)
            kill(pid, SIGCONT)
        }
        stopper.start()
        return stopper
    }

    @Test func aStoppedServerShowsAsLatencyWhenEveryStateIsDelivered() throws {
        let server = try ServerProcess(["--no-conflation"])
        _ = stopForASecond(server)
        let (status, output, report) = try load(server, ["--followers", "20", "--rate", "200", "--duration", "5", "--drain", "5"])
        #expect(status == 0, "\(output)")
        let latency = report["ageMs"] as? [String: Any] ?? [:]
        #expect((latency["max"] as? Double ?? 0) >= 800, "states sent during a 1 s stop arrive about 1 s late: \(latency)")
        #expect(report["skippedStates"] as? Int == 0, "nothing is conflated: \(report)")
        #expect(report["deliveriesReceived"] as? Int == report["deliveriesExpected"] as? Int)
    }

    @Test func aStoppedServerWithConflationSendsFewerButNewestStates() throws {
        let server = try ServerProcess()
        _ = stopForASecond(server)
        let (status, output, report) = try load(server, ["--followers", "20", "--rate", "200", "--duration", "5", "--drain", "5"])
        #expect(status == 0, "\(output)")
        #expect((report["skippedStates"] as? Int ?? 0) > 0, "states sent during the stop were conflated: \(report)")
        let reach = report["reach"] as? [String: Any] ?? [:]
        #expect(reach["reachedFinalState"] as? Int == 20, "every follower ends on the newest state: \(reach)")
        #expect(report["outOfOrder"] as? Int == 0)
    }

    /// Issue 20: with the server stopped for a second and conflation on, followers get few
    /// states and those are fresh (age stays low), but the updates sent during the stop
    /// reach them a second late (staleness). The report shows both, and a follower of the
    /// test's own, on a raw socket, that timestamps every frame it reads, counts the same
    /// staleness and coverage within 10 %.
    @Test func stalenessShowsWhatAgeHidesAndAnIndependentCountAgrees() throws {
        let server = try ServerProcess()
        let witness = try TimestampingFollower(port: server.port, room: "load-0")
        _ = stopForASecond(server)
        let (status, output, report) = try load(server, ["--followers", "20", "--rate", "200", "--duration", "5", "--drain", "3"])
        #expect(status == 0, "\(output)")
        let staleness = report["stalenessMs"] as? [String: Any] ?? [:]
        let age = report["ageMs"] as? [String: Any] ?? [:]
        let stalenessP99 = staleness["p99"] as? Double ?? 0
        // A fifth of the updates were sent during the stop and held up to a second late; the
        // states that arrived were nearly all fresh (a few per follower from the backlog).
        let stalenessP90 = staleness["p90"] as? Double ?? 0
        let ageP90 = age["p90"] as? Double ?? .infinity
        #expect(stalenessP99 >= 500, "updates sent during the stop were held a second late: \(staleness)")
        #expect(stalenessP90 >= 200 && ageP90 < stalenessP90 / 4, "while the states that arrived were fresh: age \(age), staleness \(staleness)")
        let coverage = report["coverage"] as? Double ?? 0
        #expect(coverage > 0.99, "every follower ended holding every update or a newer one: \(coverage)")

        // The witness: every frame timestamped on arrival; the updates between two states it
        // read were sent evenly between their t (a steady rate), and covered on arrival.
        let seen = witness.stop()
        let sent = report["updatesSent"] as? Int ?? 0
        try #require(seen.count >= 2 && sent > 0, "the witness read states: \(seen.count)")
        var stalenessSamples = [Double]()
        for (previous, state) in zip(seen, seen.dropFirst()) where state.seq > previous.seq {
            let updates = state.seq - previous.seq
            for k in 1...updates {
                let sentAt = Double(previous.t) + Double(state.t - previous.t) * Double(k) / Double(updates)
                stalenessSamples.append((Double(state.arrival) - sentAt) / 1000)
            }
        }
        stalenessSamples.sort()
        let witnessP99 = stalenessSamples[min(stalenessSamples.count - 1, Int(Double(stalenessSamples.count) * 0.99))]
        let witnessCoverage = Double(stalenessSamples.count + 1) / Double(sent)
        #expect(abs(witnessP99 - stalenessP99) <= 0.1 * max(witnessP99, stalenessP99), "p99 staleness: load \(stalenessP99) ms, witness \(witnessP99) ms")
        #expect(abs(witnessCoverage - coverage) <= 0.1, "coverage: load \(coverage), witness \(witnessCoverage)")
    }
}

/// A follower on a raw socket that timestamps every state it reads (monotonic µs, the
/// clock the load tool's `t` uses), on a thread of its own.
final class TimestampingFollower: @unchecked Sendable {
    struct Seen { let seq: Int; let t: Int64; let arrival: Int64 }
    private let client: RawClient
    private let lock = NSLock()
    private var seen = [Seen]()
    private var running = true
    private var thread: Thread?

    init(port: Int, room: String) throws {
        client = try RawClient(port: port)
        let head = client.upgrade(path: "/rooms/\(room)")
        guard head.hasPrefix("HTTP/1.1 101 ") else { throw Failure("witness not admitted: \(head)") }
        let thread = Thread { [self] in read() }
        self.thread = thread
        thread.start()
    }

    private func read() {
        var buffer = [UInt8]()
        while lock.withLock({ running }) {
            let bytes = client.receive(atLeast: 1, timeout: 0.05)
            guard !bytes.isEmpty else { continue }
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let arrival = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
            buffer += bytes
            var used = 0
            for text in serverTexts(buffer, consumed: &used) where text.hasPrefix(#"{"type":"state""#) {
                guard let json = try? JSON.parse(text), let seq = json["seq"]?.double, let t = json["t"]?.double.map({ Int64($0) }) else { continue }
                lock.withLock { seen.append(Seen(seq: Int(seq), t: t, arrival: arrival)) }
            }
            buffer.removeFirst(used)
        }
    }

    /// Stops reading; what it saw, in order.
    func stop() -> [Seen] {
        lock.withLock { running = false }
        while thread?.isFinished == false { usleep(10_000) }
        return lock.withLock { seen }
    }
}
