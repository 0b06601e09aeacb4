package import RoomKit
import ScrollModel
import TerminalFrames
import Transport

/// Terminal readers (`GET /rooms/NAME/tty`): followers whose room renders their view
/// (`ScreenReaders`) instead of sending them messages. They join and leave as any member does
/// (counted in presence, refused by the same rules); these are the hub's few words with them.
extension LocalRoomHub {
    /// Adds a joining reader to its room's screens (under the room's lock, on its loop),
    /// making them with the room as it is now if it had none.
    func addScreenReader(_ member: RoomMember, wanted: ScreenSize, in guarded: inout Room.Guarded, room: Room, loop: EventLoop) {
        let readers = guarded.screens ?? ScreenReaders(room: room.name, events: screenEvents(guarded), loops: loops,
                                                       sizeLimit: options.screenSizesPerRoom, renderer: screenRenderer)
        guarded.screens = readers
        readers.add(member, wanted: wanted, loop: loop)
        screenRenderer.counters.readers.add(1, ordering: .relaxed)
    }

    /// Removes a leaving reader from its room's screens (under the room's lock, on its loop);
    /// true when it was their last (they go with it).
    func removeScreenReader(_ member: RoomMember, from readers: ScreenReaders, loop: EventLoop) -> Bool {
        screenRenderer.counters.readers.subtract(1, ordering: .relaxed)
        return readers.remove(member, loop: loop)
    }

    /// A broadcast as the room's readers' views take it.
    func postToScreens(_ broadcast: Broadcast, in guarded: inout Room.Guarded) {
        guard let readers = guarded.screens else { return }
        switch broadcast {
        case .state(let state): readers.post(.state(state))
        case .driver(let id, let name): readers.post(.driver(id?.description, name: name))
        case .document(let document): readers.post(.document(document))
        case .presence: readers.post(.presence(guarded.presence))
        }
    }

    /// The room as a follower's view is first told it: document, driver, presence, state.
    private func screenEvents(_ guarded: Room.Guarded) -> [ServerEvent] {
        let core = guarded.core
        var events = [ServerEvent]()
        if let document = core.document { events.append(.document(document)) }
        events.append(.driver(core.driver?.description, name: core.driverName))
        events.append(.presence(guarded.presence))
        if let state = core.state { events.append(.state(state)) }
        return events
    }
}
