// Follows a room from a Swift program: prints the block at the top of an 80-column,
// 24-row view each time the presenter moves, mapped by block id as `scrollsync follow`
// maps it (PROTOCOL.md §3), so it names the same block at any width.
// usage: follow-example ROOM_URL [STATES]   (stops after STATES states)
import SyncClient
import TerminalUI

let url = CommandLine.arguments.dropFirst().first ?? "ws://127.0.0.1:8080/rooms/demo"
let wanted = CommandLine.arguments.dropFirst(2).first.flatMap { Int($0) } ?? .max
try await RoomSession.connect(to: url) { room in
    var layout: Layout?
    var state: ScrollState?
    var shown = 0
    for try await event in room.events {
        switch event {
        case .server(.welcome(let welcome)): state = welcome.state  // the room's place, at once
        case .server(.state(let newer)): state = newer
        case .server(.document(let shared)):
            layout = Layout(document: Document(text: shared.text, format: shared.format, name: shared.name), width: 80)
        case .connection(.refused(let reason)): print("refused: \(reason)")
        default: continue
        }
        guard let layout, let current = state, !layout.rows.isEmpty else { continue }
        let top = layout.top(for: current, viewport: 24)
        print("seq \(current.seq): \(layout.document.blocks[layout.rows[top].block].id)")
        state = nil
        shown += 1
        if shown == wanted { return }  // leaving the closure closes the room
    }
}
