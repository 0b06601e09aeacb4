import RoomKit
import Synchronization
import Transport

/// A presenter key's way in: counted against its address and room before it is checked
/// (`KeyFailureLimits`; with an engine, against the same count on every node), then hashed
/// against the room's record off the loops (`KeyHasher`), the answer back on the asking loop.
/// Joins and `GET /rooms/NAME/recording` take the same way, so a limit holds for both.
package final class KeyAdmission: Sendable {
    package let failures: KeyFailureLimits
    package let hasher = KeyHasher()

    package init(failuresPerMinute: Int) {
        failures = KeyFailureLimits(perMinute: failuresPerMinute)
    }

    package enum Outcome {
        /// Hashed: `record` is the key's record against the room's (equal to it when the key is
        /// right; for a room without one, a fresh record to bind). The caller settles `ticket`.
        case checked(record: String, ticket: KeyCheckTicket)
        /// Not checked: the address tried as many keys for the room as it may (wait `seconds`).
        case limited(seconds: Int)
        /// Not checked: too many checks wait already.
        case busy
        /// Not checked: `wanted` said the client no longer needs it (it left).
        case unwanted
    }

    /// Checks `key` against `existing` (nil: none yet) for `room` from `address`; `completion`
    /// runs once on `loop`, whatever the outcome. `wanted` is asked before the (slow) hash: a
    /// client that left needs none (`.unwanted`).
    package func check(_ key: String, against existing: String?, room: String, address: String, engine: (any RoomEngine)?, on loop: EventLoop,
               wanted: @escaping @Sendable () -> Bool = { true }, completion: @escaping (Outcome) -> Void) {
        let ticket: KeyCheckTicket
        switch failures.begin(address: address, room: room, now: loop.now) {
        case .failure(let wait): return completion(.limited(seconds: wait.seconds))
        case .success(let begun): ticket = begun
        }
        let answer = Unchecked(completion)
        let hash: @Sendable () -> Void = { [self] in
            let queued = hasher.hash(key, matching: existing, room: room, from: address, on: loop) { record in
                answer.value(.checked(record: record, ticket: ticket))
            }
            if !queued {
                ticket.settle(failed: false, now: loop.now)
                answer.value(.busy)
            }
        }
        guard let engine, engine.isAvailable, failures.perMinute > 0 else { return hash() }
        let count = "keys " + address
        engine.take(count: count, room: room, limit: failures.perMinute, windowMilliseconds: Int(KeyFailureLimits.minute / 1_000_000)) { taken in
            loop.execute {
                guard wanted() else {
                    ticket.settle(failed: false, now: loop.now)
                    return answer.value(.unwanted)
                }
                if taken == false {
                    ticket.settle(failed: false, now: loop.now)
                    return answer.value(.limited(seconds: 60))
                }
                // A check that does not fail gives its use of the shared count back.
                if taken == true { ticket.whenNotFailed { engine.giveBack(count: count, room: room) } }
                hash()
            }
        }
    }
}
