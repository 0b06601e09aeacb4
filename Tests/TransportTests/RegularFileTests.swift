import Foundation
import Testing
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// `readRegularFile`: what an operator names (a certificate, a key, the configuration) is read
/// only when it is a regular file; anything else is refused at once, with its kind.
@Suite("Reading a regular file")
struct RegularFileTests {
    static func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("regular-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aRegularFileAndALinkToOneAreRead() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "hello".write(toFile: directory + "/file", atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: directory + "/file")
        #expect(try readRegularFile(directory + "/file", atMost: 5) == Array("hello".utf8))
        #expect(try readRegularFile(directory + "/link", atMost: 5) == Array("hello".utf8))
        #expect(throws: RegularFileError.tooLarge(limit: 4)) { try readRegularFile(directory + "/file", atMost: 4) }
        #expect(throws: RegularFileError.system(SystemError(call: "stat", errno: ENOENT))) { try readRegularFile(directory + "/none", atMost: 5) }
    }

    /// A FIFO with no writer is refused at once: opened in blocking mode, it would wait forever.
    @Test(.timeLimit(.minutes(1))) func aFIFOADirectoryAndADeviceAreRefusedWithTheirKind() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(mkfifo(directory + "/fifo", 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: directory + "/link-to-fifo", withDestinationPath: directory + "/fifo")
        for (path, kind) in [(directory + "/fifo", "a FIFO"), (directory + "/link-to-fifo", "a FIFO"), (directory, "a directory"),
                             ("/dev/zero", "a character device"), ("/dev/null", "a character device")] {
            #expect(throws: RegularFileError.notRegular(kind: kind), "\(path)") { try readRegularFile(path, atMost: 1 << 20) }
        }
        #expect(RegularFileError.notRegular(kind: "a FIFO").description == "it is a FIFO, not a regular file")
    }
}
