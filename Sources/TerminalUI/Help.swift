/// The keys of a viewer, with what each does (`h` or F1 shows them; issue 47.12).
func helpKeys(_ role: ViewerModel.Role) -> [(keys: String, does: String)] {
    var keys = [
        ("j k  ↑ ↓", "a line down, up"),
        ("space b", "a page down, up (PgDn, PgUp)"),
        ("g G", "top, bottom (Home, End)"),
        ("n N", "next, previous heading"),
        ("/ ?", "search forward, backward: type a pattern, Enter jumps to the next match; an empty pattern repeats the last"),
    ]
    switch role {
    case .presenter:
        keys.append(("t", "take control: the room follows you"))
        keys.append(("f", "follow the driver again (after scrolling alone)"))
    case .follower:
        keys.append(("f", "follow the presenter again (scrolling or searching detaches)"))
    }
    return keys + [("h F1", "this help (any key hides it)"), ("q", "quit")]
}

/// The help as a framed box of rows, drawn over the top of the document area; each
/// explanation wraps beside its keys, or under them on a narrow terminal.
func helpBox(_ model: ViewerModel) -> [String] {
    let keys = helpKeys(model.role)
    let inner = max(4, model.width - 5)  // a leading space and the frame
    let keyWidth = keys.map { DisplayWidth.of($0.keys) }.max() ?? 0
    let beside = inner - keyWidth - 2 >= 24
    var lines = ["Keys (any key hides this)"]
    for (key, does) in keys {
        if beside {
            let pad = String(repeating: " ", count: keyWidth - DisplayWidth.of(key))
            for (index, part) in Layout.wrap(does, width: inner - keyWidth - 2).enumerated() {
                lines.append((index == 0 ? key + pad : String(repeating: " ", count: keyWidth)) + "  " + part)
            }
        } else {
            lines.append(key)
            lines += Layout.wrap(does, width: max(1, inner - 2)).map { "  " + $0 }
        }
    }
    let width = min(inner, lines.map { DisplayWidth.of($0) }.max() ?? 0)
    let rule = String(repeating: "─", count: width + 2)
    return ["┌" + rule + "┐"] + lines.map { "│ " + fit($0, width) + " │" } + ["└" + rule + "┘"]
}
