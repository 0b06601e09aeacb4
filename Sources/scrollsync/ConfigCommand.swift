import ArgumentParser
import Operations
import Transport
import ScrollModel
import SyncServer
#if canImport(Glibc)
import Glibc
#endif

struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with server configuration files.",
        subcommands: [Check.self, Defaults.self])

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

extension Config {
    struct Defaults: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the built-in defaults as a configuration file (Config/scrollsync.json is its output).")

        func run() {
            print(Settings.describe(ServerConfiguration()))
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
