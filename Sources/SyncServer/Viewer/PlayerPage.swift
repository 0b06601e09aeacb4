import Documents
import ScrollModel

/// A recording as a page of the browser viewer (README, *Play a recording in a browser*): the
/// viewer's own page with a player's controls, and the recording as inline JSON that
/// `viewer-player.js` feeds into the code path a live room's messages take. Served at
/// `/rooms/NAME/recording` to a browser, and written whole by `scrollsync play FILE --html`.
public enum PlayerPage {
    /// The page for `recording`; `selfContained` puts the style and script inline (a file that
    /// needs no server and no network); `times` replaces the events' times (an idle limit).
    public static func html(_ recording: Recording, selfContained: Bool, times: [Double]? = nil) -> String {
        ViewerAssets.page(room: recording.header.room, player: data(recording, times: times), selfContained: selfContained)
    }

    /// The player's JSON: `room`, `started`, `duration` (seconds), `documents` (by
    /// fingerprint: `name`, `title` and `html`, made from the block model as for a live room),
    /// `sections` (each heading the talk reached: `title`, `id`, `seconds` when it first came
    /// to the top) and `events` (the recording's lines, its header's document first).
    static func data(_ recording: Recording, times: [Double]? = nil) -> String {
        var events: [Recording.Event] = recording.header.document.map { [Recording.Event(seconds: 0, message: .document($0))] } ?? []
        for (index, event) in recording.events.enumerated() {
            events.append(Recording.Event(seconds: times.map { $0.indices.contains(index) ? $0[index] : event.seconds } ?? event.seconds,
                                          message: event.message))
        }
        var documents: [String: Document] = [:]
        var order: [String] = []
        var sections: [(title: String, id: String, seconds: Double)] = []
        var reached = Set<String>()
        var current: Document?
        for event in events {
            switch event.message {
            case .document(let shared):
                if documents[shared.fingerprint] == nil {
                    documents[shared.fingerprint] = Document(text: shared.text, format: shared.format, name: shared.name)
                    order.append(shared.fingerprint)
                }
                current = documents[shared.fingerprint]
            case .state(let state):
                guard let document = current, let id = state.anchor?.id,
                      let index = document.blocks.firstIndex(where: { $0.id == id }),
                      let heading = document.blocks[index].section else { continue }
                let block = document.blocks[heading]
                guard reached.insert(document.fingerprint + "#" + block.id).inserted else { continue }
                sections.append((InlineMarkup.plain(block.text), block.id, event.seconds))
            case .driver, .presence:
                continue
            }
        }
        var w = JSONWriter(capacity: 4096)
        w.beginObject()
        w.field("room", recording.header.room)
        w.field("started", recording.header.started)
        w.field("duration", events.last?.seconds ?? 0)
        w.key("documents")
        w.beginObject()
        for fingerprint in order {
            guard let document = documents[fingerprint] else { continue }
            w.key(text: fingerprint)
            w.beginObject()
            w.field("title", document.title)
            w.field("html", DocumentHTML.render(document))
            w.endObject()
        }
        w.endObject()
        w.key("sections")
        w.beginArray()
        for section in sections {
            w.beginObject()
            w.field("title", section.title)
            w.field("id", section.id)
            w.field("seconds", section.seconds)
            w.endObject()
        }
        w.endArray()
        w.key("events")
        w.beginArray()
        for event in events { w.raw(String(decoding: Recording.eventLine(event), as: UTF8.self)) }
        w.endArray()
        w.endObject()
        return scriptSafe(String(decoding: w.bytes, as: UTF8.self))
    }

    /// JSON that is safe inside a `<script>` element: `<`, `>` and `&` (so no `</script>` or
    /// `<!--` closes or changes it) and U+2028/U+2029 as `\u` escapes. In JSON they occur only
    /// inside strings, where the escape means the same character.
    static func scriptSafe(_ json: String) -> String {
        var out = String()
        out.reserveCapacity(json.utf8.count)
        for scalar in json.unicodeScalars {
            switch scalar {
            case "<": out += "\\u003c"
            case ">": out += "\\u003e"
            case "&": out += "\\u0026"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
