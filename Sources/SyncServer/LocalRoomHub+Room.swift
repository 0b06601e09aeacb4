import Deflate
import ScrollModel
import Synchronization

extension LocalRoomHub {
    final class Room: @unchecked Sendable {
        struct Guarded {
            var core: RoomCore
            var locals: [LocalRoom?]
            var emptySince: UInt64?
            var compressingMembers = 0
            /// One more per document published here, so members get each document once.
            var documentVersion: UInt32 = 0
            /// Forgotten by the idle sweep; a join that finds it so starts over.
            var removed = false
            /// The address that created it, while no presenter has joined it (unclaimed).
            var creator: String?
            /// `seq` the store has written before it is used; with a store, a scroll that waits
            /// for it (a newer scroll replaces it).
            var seq = SeqReservation.unbounded
            var held: (message: ClientMessage, member: Unchecked<RoomMember>)?
            /// The held scroll's release is scheduled on its sender's loop (it takes the newest then).
            var releasing = false
            /// When presence goes out.
            var presenceThrottle: PresenceThrottle
            /// Shared rooms: fetched from the engine (joins wait until then), the last change
            /// version applied, other nodes' counts, this node's counts not yet announced,
            /// and the last state proposed here (the base for the next one's direction).
            var attached = true
            var waiting: [@Sendable () -> Void] = []
            var version = 0
            var remote: [String: (presence: Presence, at: UInt64)] = [:]
            var announce = false
            var proposed: ScrollState?

            /// Counts over every node.
            var presence: Presence {
                remote.values.reduce(core.presence) { $0.adding($1.presence) }
            }
            /// A fetch of the room's hash is on its way (after a change that could not follow),
            /// or due at the next tick (at most one a second per room).
            var resyncing = false
            var resyncDue = false
            var resyncedAt: UInt64?
        }

        let name: String
        let guarded: Mutex<Guarded>
        /// Compressor for shared frames; used only with the room locked.
        let deflater = Deflater(windowBits: 15, noContextTakeover: true)

        init(core: RoomCore, loops: Int, presenceIntervalMilliseconds: Int, attached: Bool = true) {
            name = core.name
            guarded = Mutex(Guarded(core: core, locals: Array(repeating: nil, count: loops),
                                    presenceThrottle: PresenceThrottle(intervalMilliseconds: presenceIntervalMilliseconds), attached: attached))
        }
    }
}
