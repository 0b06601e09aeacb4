import ArgumentParser
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
                print(Settings.describe(try loadConfiguration(file: file, flags: [])))
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

/// A whole text file, or nil (errno says why).
func readTextFile(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count == 0 { break }
        bytes += buffer[0..<count]
        if bytes.count > 16 << 20 { errno = EFBIG; return nil }
    }
    return String(decoding: bytes, as: UTF8.self)
}
