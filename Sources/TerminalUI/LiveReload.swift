import ScrollModel

/// Live reload (issue 47.10): the presenter saved its file. The view keeps its place by
/// anchor — the block at the top, or, when that block is gone, the nearest one that is left —
/// and the room gets the new text, then (driving) the place in it, so followers move with it.
func reload(name: String, format: SharedDocument.Format, text: String, _ model: inout ViewerModel) -> [ViewerCommand] {
    guard model.role == .presenter, let old = model.layout else { return [] }
    guard text != model.sharedText?.text else {
        // Saved back to the version shown (after a save that could not be read): nothing to
        // share, but the warning that the file could not be read is over.
        if model.notice?.hasPrefix(reloadNoticePrefix) == true { model.notice = nil }
        return []
    }
    let anchor = old.anchor(atRow: model.top)
    let layout = Layout(document: Document(text: text, format: format, name: name), width: model.width)
    model.sharedText = (name, format, text)
    model.layout = layout
    model.search.match = nil  // its row may hold other text now
    model.notice = nil
    if let anchor { model.top = survivingRow(for: anchor, from: old.document, in: layout) ?? model.top }
    model.top = min(max(0, model.top), model.maxTop)
    if model.isDriving {
        model.pendingUpdate = true  // the room hears the place in the new text (after the text)
    } else if model.tracksRoom, let state = model.lastState {
        follow(state, &model)
    }
    // Offline, the next welcome shares the new text (`sharedText`).
    return model.connection == .connected ? [.send(.document(name: name, format: format, text: text))] : []
}

/// How the notice of a save that could not be read starts (`⚠ reload` on the status line).
public let reloadNoticePrefix = "reload:"

/// The row `anchor` (a block of `old`) is at in `layout`: the block itself if its id is still
/// there, else the start of the nearest block of `old` that is (the one before first).
func survivingRow(for anchor: Anchor, from old: Document, in layout: Layout) -> Int? {
    if let row = layout.row(for: anchor) { return row }
    guard let index = old.blocks.firstIndex(where: { $0.id == anchor.id }) else { return nil }
    for distance in 1..<max(2, old.blocks.count) {
        for neighbour in [index - distance, index + distance] where old.blocks.indices.contains(neighbour) {
            if let row = layout.row(for: Anchor(id: old.blocks[neighbour].id, fraction: 0)) { return row }
        }
    }
    return nil
}
