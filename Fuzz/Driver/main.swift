import CFuzzDriver
import FuzzHarnesses
#if canImport(Glibc)
import Glibc
#endif

// One libFuzzer binary for every parser: FUZZ_TARGET names the target (FuzzTarget's raw
// values); the other arguments are libFuzzer's. An input that breaks an invariant aborts
// with the finding, which libFuzzer saves as a crash artifact. Scripts/fuzz runs it.
nonisolated(unsafe) var target = FuzzTarget.http

/// Writes `text` to standard error (no stdio: `stderr` is shared mutable state to Swift 6).
func say(_ text: String) {
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
}
guard let name = getenv("FUZZ_TARGET").map({ String(cString: $0) }), let chosen = FuzzTarget(rawValue: name) else {
    say("FUZZ_TARGET must be one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: " "))\n")
    exit(2)
}
target = chosen
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try target.check(bytes)
    } catch {
        say("finding (\(target.rawValue)): \(error)\n")
        abort()
    }
    return 0
})
