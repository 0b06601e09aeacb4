import Dispatch
import ScrollModel
import SyncClient
import Synchronization
import Transport
import WebSocketCore
#if canImport(Glibc)
import Glibc
#endif

/// Whether followers ended on their room's newest state.
public struct Reach: Sendable {
    public var followers = 0
    public var reached = 0
    public var slowFollowers = 0
    public var slowReached = 0

    func merged(_ other: Reach) -> Reach {
        Reach(followers: followers + other.followers, reached: reached + other.reached,
              slowFollowers: slowFollowers + other.slowFollowers, slowReached: slowReached + other.slowReached)
    }
}

/// A room as the load test tracks it across loops.
final class RoomTrack: Sendable {
    let name: String
    /// The newest `seq` the room's presenter has seen come back.
    let newestSeq = Atomic<Int>(0)
    let followersOpen = Atomic<Int>(0)
    /// When (the `t`, monotonic µs) each update of this phase was sent, in order: the
    /// presenter appends, followers read it on their loops to see which states a state
    /// they receive covers.
    let sent = Mutex<[Int64]>([])
    /// Where in each 1/rate interval its presenter sends (0 ..< 1): rooms spread evenly, not
    /// all in the same millisecond, as people's scrolling is.
    let phase: Double

    init(name: String, phase: Double = 0) {
        self.name = name
        self.phase = phase
    }

    /// Calls `body` with the send times in (`after`, `upTo`]: the updates a follower that
    /// held the state sent at `after` covers on receiving the one sent at `upTo`.
    func covered(after: Int64, upTo: Int64, _ body: (Int64) -> Void) {
        sent.withLock { times in
            var low = 0
            var high = times.count
            while low < high {  // the first time > after
                let middle = (low + high) / 2
                if times[middle] <= after { low = middle + 1 } else { high = middle }
            }
            var index = low
            while index < times.count, times[index] <= upTo {
                body(times[index])
                index += 1
            }
        }
    }
}
