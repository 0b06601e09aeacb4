import ArgumentParser
import Transport
import ScrollModel
import SyncServer
#if canImport(Glibc)
import Glibc
#endif

struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with server configuration files.",
        subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a configuration and print the effective one (secrets masked).",
            discussion: "Reads the file (or SCROLLSYNC_CONFIG) and SCROLLSYNC_… variables as `serve` would. Exit status 78 when it is invalid.")

        @Argument(help: "Configuration file (JSON).")
        var file: String?

        func run() throws {
            do {
                let configuration = try loadConfiguration(file: file, flags: [])
                print(Settings.describe(configuration))
                // On standard error: standard output stays a valid configuration file.
                for warning in ConfigurationWarnings.of(configuration) { log("warning: \(warning)", to: STDERR_FILENO) }
            } catch {
                logError("configuration: \(error)")
                throw ExitCode(78)
            }
        }
    }
}

/// The process environment as a dictionary.
enum ProcessEnvironment {
    static var all: [String: String] {
        var values = [String: String]()
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") { values[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
            entry += 1
        }
        return values
    }
}
