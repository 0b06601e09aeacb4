#if canImport(Glibc)
import Glibc
#endif

/// The process's table of descriptors. The kernel grows it as descriptors are opened
/// (doubling), and in a process with several threads each growth waits for an RCU grace
/// period: milliseconds here, for every connection being accepted meanwhile (a 10,000-connection
/// storm grows it eight times: BENCHMARKS.md, a storm's p99). Growing it once, before serving,
/// to what the server may open takes that wait out of the accept path; the kernel never
/// shrinks it (kernel memory: 8 bytes and 2 bits per descriptor).
public enum DescriptorTable {
    /// Grows the table to hold descriptors up to `count` (at most the soft limit).
    public static func reserve(_ count: Int) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let highest = Int32(clamping: min(count, Int(clamping: limit.rlim_cur) - 1))
        guard highest > 0 else { return }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard null >= 0 else { return }
        let high = fcntl(null, F_DUPFD_CLOEXEC, highest)
        if high >= 0 { close(high) }
        close(null)
    }
}
