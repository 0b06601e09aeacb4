#if canImport(Glibc)
import Glibc
#endif

/// The wall clock in milliseconds since 1970 (a token's `exp`, a node's counts in Redis).
package func wallMilliseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
}

/// The wall clock in microseconds since 1970 (where a new Redis hash starts a room's `seq`).
package func wallMicroseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return time.tv_sec * 1_000_000 + time.tv_nsec / 1000
}
