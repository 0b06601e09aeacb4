import Foundation
import FuzzHarnesses
import Testing

/// Every input saved in `Fuzz/regressions/TARGET/` (what a past finding needed) and every seed
/// in `Fuzz/seeds/TARGET/` runs through its fuzz target's invariants here, so that a finding
/// fixed once stays fixed without libFuzzer (issue 22).
@Suite("Fuzz regressions and seeds")
struct FuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    struct Input: Sendable, CustomTestStringConvertible {
        let target: FuzzTarget
        let path: String
        var testDescription: String { "\(target.rawValue): \((path as NSString).lastPathComponent)" }
    }

    static func inputs(in folder: String) -> [Input] {
        FuzzTarget.allCases.flatMap { target -> [Input] in
            let directory = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.sorted().map { Input(target: target, path: directory.appendingPathComponent($0).path) }
        }
    }

    static let regressions = inputs(in: "regressions")
    static let seeds = inputs(in: "seeds")

    /// The findings of the first campaign (issue 22: block ids, a zero-width first word, long
    /// list markers, drive durations, URL round trips) are all kept as regressions.
    @Test func thePastFindingsAreKept() {
        let targets = Set(Self.regressions.map(\.target))
        #expect(targets.isSuperset(of: [.markdown, .driveScript, .websocketURL]), "\(targets)")
        #expect(Self.regressions.count >= 6)
        #expect(Set(Self.seeds.map(\.target)) == Set(FuzzTarget.allCases), "every target has seeds")
    }

    @Test(arguments: regressions)
    func regressionStaysFixed(_ input: Input) throws {
        let data = try #require(FileManager.default.contents(atPath: input.path))
        #expect(throws: Never.self) { try input.target.check(Array(data)) }
    }

    @Test(arguments: seeds)
    func seedKeepsTheInvariants(_ input: Input) throws {
        let data = try #require(FileManager.default.contents(atPath: input.path))
        #expect(throws: Never.self) { try input.target.check(Array(data)) }
    }

    /// The checks can fail: a broken invariant is reported, not swallowed.
    @Test func aBrokenInvariantIsAFinding() {
        #expect(throws: FuzzFinding.self) { try FuzzTarget.expect(false, "broken") }
    }
}
