package import Access
import Deflate
package import RoomKit
import ScrollModel
import Synchronization

extension LocalRoomHub {
    final class Room: @unchecked Sendable {
        /// What the hub names a member by in its rooms' machines: the one `Sender` RoomKit
        /// compiles the machine for (`MemberReference`).
        typealias Machine = RoomMachine<MemberReference>

        struct Guarded: Sendable {
            /// The room's rules and state (`step` runs it).
            var machine: Machine
            var core: RoomCore {
                get { machine.core }
                _modify { yield &machine.core }
            }
            var locals: [LocalRoom?]
            var emptySince: UInt64?
            var compressingMembers = 0
            /// One more per document published here, so members get each document once.
            var documentVersion: UInt32 = 0
            /// Forgotten by the idle sweep; a join that finds it so starts over.
            var removed = false
            /// When presence goes out.
            var presenceThrottle: PresenceThrottle
            /// Shared rooms: fetched from the engine (joins wait until then), other nodes'
            /// counts, and this node's counts not yet announced.
            var attached = true
            var waiting: [@Sendable () -> Void] = []
            /// Presenters' joins waiting for their claim of control, by its ticket (`.continueJoin`).
            var joinsAfterClaim: [Int: @Sendable () -> Void] = [:]
            var remote: [String: (presence: Presence, at: UInt64)] = [:]
            var announce = false

            /// Counts over every node.
            var presence: Presence {
                remote.values.reduce(core.presence) { $0.adding($1.presence) }
            }
            /// A fetch of the room's hash is on its way (after a change that could not follow),
            /// or due at the next tick (at most one a second per room).
            var resyncing = false
            var resyncDue = false
            var resyncedAt: UInt64?
            /// The room's timeline, while it is recorded.
            var recording: RoomRecording?
            /// Its terminal readers' views, while it has readers.
            var screens: ScreenReaders?
        }

        let name: String
        let guarded: Mutex<Guarded>
        /// Compressor for shared frames; used only with the room locked.
        let deflater = Deflater(windowBits: 15, noContextTakeover: true)

        init(core: RoomCore, seq: SeqReservation, unclaimedBy creator: String? = nil, loops: Int, presenceIntervalMilliseconds: Int,
             attached: Bool = true) {
            name = core.name
            guarded = Mutex(Guarded(machine: Machine(core: core, seq: seq, unclaimedBy: creator), locals: Array(repeating: nil, count: loops),
                                    presenceThrottle: PresenceThrottle(intervalMilliseconds: presenceIntervalMilliseconds), attached: attached))
        }
    }
}

extension MemberReference {
    /// The member a room's machine names (the hub makes every reference from a `RoomMember`).
    var member: RoomMember { unsafeDowncast(object, to: RoomMember.self) }
}
