import Foundation
@testable import Hub
import Operations
import ScrollModel
@testable import scrollsync
import SyncServer
import Testing

/// Issue 45.4: one table per setting (`Settings.all`). `serve`'s flags, the reload, the shipped
/// defaults and the documentation's tables all agree with it.
@Suite("Settings table")
struct SettingsTableTests {
    static let repository = ConfigurationTests.repository

    /// Each flag property of `serve` is a flag of the table and each flag of the table is a
    /// property, listed by `serve --help` with the table's help and key.
    @Test func serveFlagsAreTheTablesFlags() throws {
        let properties = Set(settingFlagProperties(of: Serve()).keys).subtracting(["config"])
        let table = Settings.all.flatMap(\.flags).map(\.name)
        #expect(Set(table.map(normalizedFlagName)).count == table.count, "no two flags share a name")
        #expect(properties == Set(table.map(normalizedFlagName)))
        let help = Serve.helpMessage(columns: 10_000)
        for name in table {
            #expect(help.contains("--\(name)") && help.contains(Settings.flagHelp(name)), "serve --help shows --\(name) with \(Settings.flagHelp(name))")
        }
        #expect(Settings.flagHelp("max-connections") == "Open connections in all. [limits.connections]")
        #expect(Settings.flagHelp("in-memory").hasSuffix("[store.directory = null]"))
    }

    /// Every flag, given alone, sets its setting and nothing else, to a value the setting takes.
    @Test func everyFlagSetsItsSetting() throws {
        for setting in Settings.all {
            for flag in setting.flags {
                let arguments = flag.sets != nil ? [["--\(flag.name)"]] : [["--\(flag.name)", "7"], ["--\(flag.name)", "debug"]]
                var taken = false
                for argument in arguments {
                    let overrides = try Serve.parse(argument).overrides
                    #expect(overrides.map(\.key) == [setting.key], "\(argument)")
                    var configuration = ServerConfiguration()
                    guard (try? Settings.apply(overrides, to: &configuration, source: "command line")) != nil else { continue }
                    #expect(setting.value(in: configuration) != setting.defaultValue, "\(argument) changes \(setting.key)")
                    if let value = flag.sets { #expect(setting.value(in: configuration) == value, "\(argument)") }
                    taken = true
                    break
                }
                #expect(taken, "--\(flag.name) gives \(setting.key) a value it takes")
            }
        }
        // A flag repeated makes a list; the later flag of one setting wins.
        let serve = try Serve.parse(["--origin", "https://a", "--origin", "https://b", "--data-dir", "/srv", "--in-memory"])
        var configuration = ServerConfiguration()
        try Settings.apply(serve.overrides, to: &configuration, source: "command line")
        #expect(configuration.allowedOrigins == ["https://a", "https://b"] && configuration.dataDirectory == nil)
        // An unknown flag is an error that suggests the flag meant.
        let error = try #require(throws: (any Error).self) { try Serve.parse(["--max-conections", "5"]) }
        #expect(Serve.message(for: error).contains("--max-connections"), "\(Serve.message(for: error))")
    }

    /// A reload takes exactly the settings the table marks as reloading, and names every other
    /// one that changed as needing a restart (the certificate's own rules: ReloadTests).
    @Test func aReloadTakesTheReloadableSettingsAndNamesTheRest() throws {
        let (server, _) = try InProcessRoomTests.server()
        defer { server.shutdown() }
        var running = server.configuration
        for setting in Settings.all where !setting.key.hasPrefix("tls.") {
            var next = running
            try #require(Self.otherValue(of: setting, in: &next), "\(setting.key) takes another value")
            let report = server.reload(next)
            #expect(report.applied == (setting.reloadable ? [setting.key] : []), "\(setting.key): \(report.applied)")
            #expect(report.needRestart == (setting.reloadable ? [] : [setting.key]), "\(setting.key): \(report.needRestart)")
            if setting.reloadable { running = next }
        }
        #expect(Server.reloadableSettings == Set(Settings.reloadableKeys))
        #expect(Set(Settings.reloadableKeys) == ["tls.certificate", "tls.key", "tls.ciphers", "admin.token", "origins",
                                                 "limits.connections", "limits.connectionsPerAddress", "log.level"])
    }

    /// Gives `setting` in `configuration` a value other than its own that it takes.
    static func otherValue(of setting: Setting, in configuration: inout ServerConfiguration) -> Bool {
        let candidates: [JSON]
        switch setting.value(in: configuration) {
        case .number(let value, _): candidates = [.number(value + 1, text: "\(Int(value) + 1)"), .number(value - 1, text: "\(Int(value) - 1)")]
        case .bool(let value): candidates = [.bool(!value)]
        case .string(let value): candidates = [.string("debug"), .string(value + "x")]
        case .array: candidates = [.array([.string("https://a.example")])]
        default: candidates = [.number(1, text: "1"), .string("x")]
        }
        for candidate in candidates where candidate != setting.value(in: configuration) {
            if (try? Settings.apply([(setting.key, candidate)], to: &configuration, source: "test")) != nil { return true }
        }
        return false
    }

    /// `config defaults` prints what Config/scrollsync.json holds.
    @Test func theShippedDefaultsAreTheTablesDefaults() throws {
        let shipped = try JSON.parse(String(contentsOf: Self.repository.appendingPathComponent("Config/scrollsync.json"), encoding: .utf8))
        for setting in Settings.all {
            let path = setting.key.split(separator: ".").map(String.init)
            let value = path.reduce(Optional(shipped)) { $0?[$1] }
            #expect(value == setting.defaultValue,
                    "Config/scrollsync.json's \(setting.key) is the default: regenerate it with `scrollsync config defaults > Config/scrollsync.json`")
        }
    }

    /// Config/README.md has one row per key with its environment variable, default and flags,
    /// and no row for a key that is not one.
    @Test func configReadmeDocumentsEveryKeyWithItsDefault() throws {
        let rows = try Self.tableRows(in: "Config/README.md", header: "| key | environment | default | flag |")
        for setting in Settings.all {
            let matching = rows.filter { $0[0] == "`\(setting.key)`" }
            #expect(matching.count == 1, "Config/README.md has one row for \(setting.key)")
            guard let row = matching.first else { continue }
            #expect(row[1] == "`\(setting.environmentName)`", "\(setting.key): \(row[1])")
            #expect(row[2].hasPrefix("`\(setting.documentedDefault)`"), "\(setting.key)'s default is `\(setting.documentedDefault)`: \(row[2])")
            #expect(Self.flags(in: row[3]) == setting.flags.map(\.name), "\(setting.key)'s flags: \(row[3])")
        }
        for row in rows { #expect(Settings.setting(String(row[0].dropFirst().dropLast())) != nil, "Config/README.md documents no key \(row[0])") }
        try Self.expectReloadSentence(in: "Config/README.md", from: "SIGHUP (`systemctl reload`)", to: "Any other", keys: Settings.reloadableKeys)
    }

    /// README's table of `serve`'s flags has a row for every setting with a flag, naming its
    /// flags, its key and its default.
    @Test func readmeListsEveryFlagWithItsKeyAndDefault() throws {
        let rows = try Self.tableRows(in: "README.md", header: "| flag | key | default | meaning |")
        for setting in Settings.all where !setting.flags.isEmpty {
            let matching = rows.filter { $0[1] == "`\(setting.key)`" }
            #expect(matching.count == 1, "README.md has one row for \(setting.key)")
            guard let row = matching.first else { continue }
            #expect(Self.flags(in: row[0]) == setting.flags.map(\.name), "\(setting.key)'s flags: \(row[0])")
            #expect(row[2].hasPrefix("`\(setting.documentedDefault)`"), "\(setting.key)'s default is `\(setting.documentedDefault)`: \(row[2])")
        }
        #expect(rows.count == Settings.all.filter { !$0.flags.isEmpty }.count, "no row for a setting without a flag")
        try Self.expectReloadSentence(in: "README.md", from: "SIGHUP reads the certificate and key again for new handshakes, and takes",
                                      to: "configuration read again", keys: Settings.reloadableKeys.filter { !$0.hasPrefix("tls.") })
        try Self.expectReloadSentence(in: "docs/operations.md", from: "SIGHUP reloads without dropping anyone", to: "configuration read again",
                                      keys: Settings.reloadableKeys.filter { !$0.hasPrefix("tls.") })
    }

    /// The cells of the rows of the Markdown table under `header`.
    static func tableRows(in file: String, header: String) throws -> [[String]] {
        let text = try String(contentsOf: repository.appendingPathComponent(file), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix(header) }, "\(file) has a table \(header)")
        return lines[(start + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            line.dropFirst().dropLast().split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// The `--flags` a cell names, in order.
    static func flags(in cell: String) -> [String] {
        cell.matches(of: /`--([a-z0-9-]+)`/).map { String($0.1) }
    }

    /// The sentence of `file` from `start` to `end` names exactly `keys` (in backticks).
    static func expectReloadSentence(in file: String, from start: String, to end: String, keys: [String]) throws {
        let text = try String(contentsOf: repository.appendingPathComponent(file), encoding: .utf8).replacingOccurrences(of: "\n", with: " ")
        let from = try #require(text.range(of: start), "\(file) says what a reload takes")
        let to = try #require(text.range(of: end, range: from.upperBound..<text.endIndex))
        let named = text[from.upperBound..<to.lowerBound].matches(of: /`([a-zA-Z.]+)`/).map { String($0.1) }.filter { Settings.setting($0) != nil }
        #expect(Set(named) == Set(keys), "\(file): a reload takes \(keys), the text says \(named)")
    }
}
