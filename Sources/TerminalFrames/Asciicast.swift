import Bytes
import ScrollModel

/// A recording (Protocol/RECORDING.md) as an asciicast v2 file of the follower's view at one
/// size: a header line, then `[seconds, "o", frame]` for each change of the view, rendered by the
/// same `RoomScreens` that serves terminal readers (the frames a `curl` reader of the room
/// would have seen, at the recording's times). asciinema's player and `asciinema cat` read it.
public enum Asciicast {
    /// The file's lines (each ends with a newline). `times`: each event's time on the timeline
    /// (`--idle-limit` already applied), `idleLimit` written to the header for players.
    public static func lines(of recording: Recording, times: [Double], size: ScreenSize, idleLimit: Double?, timestamp: Int) -> [String] {
        let screens = RoomScreens(room: recording.header.room, sizeLimit: 1, events: recording.header.document.map { [.document($0)] } ?? []) {
            SharedBytes(Array($0.utf8))
        }
        _ = screens.addReader(size)
        var header = JSONWriter()
        header.beginObject()
        header.field("version", 2)
        header.field("width", size.columns)
        header.field("height", size.rows)
        header.field("timestamp", timestamp)
        if let idleLimit { header.field("idle_time_limit", idleLimit) }
        header.field("title", "ScrollSync · \(recording.header.room)")
        header.key("env")
        header.beginObject()
        header.field("TERM", "xterm-256color")
        header.endObject()
        header.endObject()
        var lines = [String(decoding: header.bytes, as: UTF8.self) + "\n"]
        func output(_ seconds: Double, _ text: String) {
            var line = JSONWriter()
            line.beginArray()
            line.double((seconds * 1_000_000).rounded() / 1_000_000)
            line.string("o")
            line.string(text)
            line.endArray()
            lines.append(String(decoding: line.bytes, as: UTF8.self) + "\n")
        }
        // The screen cleared once, then the view before the first event.
        let first = screens.render().first.map { String(decoding: $0.bytes.buffer, as: UTF8.self) } ?? ""
        output(0, "\u{1B}[H\u{1B}[2J" + first)
        for (event, time) in zip(recording.events, times) {
            let posted: ServerEvent = switch event.message {
            case .state(let state): .state(state)
            case .document(let document): .document(document)
            case .driver(let id, let name): .driver(id?.description, name: name)
            case .presence(let presence): .presence(presence)
            }
            _ = screens.post(posted)
            for frame in screens.render() { output(time, String(decoding: frame.bytes.buffer, as: UTF8.self)) }
        }
        return lines
    }
}
