import TextSafety

/// Searching the document as `less` does: `/` (or `?` backwards) opens a prompt at the
/// bottom; Enter jumps to the next match and highlights it; Enter on an empty pattern
/// repeats the last search. Patterns are plain text, matched within a row of the screen,
/// ignoring case unless they have a capital letter (vim's `smartcase`).
public struct Search: Sendable, Equatable {
    /// The pattern being typed; nil while no prompt is open.
    public internal(set) var prompt: String?
    var promptBackward = false
    /// The last pattern searched for (an empty pattern repeats it).
    public internal(set) var pattern: String?
    /// The match shown highlighted.
    public internal(set) var match: SearchMatch?
    /// What the last search found: `3/12`, `not found`.
    public internal(set) var message: String?

    var isTyping: Bool { prompt != nil }
}

/// A match: its row and its characters in the row's text as shown (`searchText`).
public struct SearchMatch: Sendable, Equatable {
    public var row: Int
    public var characters: Range<Int>
}

/// A row's text as the reader sees it (markup gone, controls as their pictures): what a
/// pattern is matched against, and what the highlight's character offsets count.
func searchText(_ row: Layout.Row) -> [Character] {
    Array(SafeText.display(InlineMarkup.plain(row.text)))
}

/// A key while the search prompt is open.
func typeSearch(_ key: Key, _ model: inout ViewerModel) -> [ViewerCommand] {
    guard var typed = model.search.prompt else { return [] }
    switch key {
    case .character(let character):
        typed.append(character)
        model.search.prompt = typed
    case .backspace where !typed.isEmpty:
        typed.removeLast()
        model.search.prompt = typed
    case .backspace, .escape, .interrupt:
        model.search.prompt = nil
    case .enter:
        model.search.prompt = nil
        let pattern = typed.isEmpty ? model.search.pattern : typed
        guard let pattern, !pattern.isEmpty else {
            model.search.message = "no previous pattern"
            return []
        }
        model.search.pattern = pattern
        return find(pattern, backward: model.search.promptBackward, &model)
    default:
        break
    }
    return []
}

/// Opens the prompt (`/` forward, `?` backward).
func openSearch(backward: Bool, _ model: inout ViewerModel) {
    model.search.prompt = ""
    model.search.promptBackward = backward
    model.search.message = nil
}

/// Jumps to the next (or previous) match of `pattern` after the highlighted one, or from
/// the top of the view, wrapping at the document's ends; the match's row goes to the top.
private func find(_ pattern: String, backward: Bool, _ model: inout ViewerModel) -> [ViewerCommand] {
    guard let layout = model.layout else { return [] }
    let matches = allMatches(of: pattern, in: layout)
    guard !matches.isEmpty else {
        model.search.match = nil
        model.search.message = "not found"
        return []
    }
    // From the highlighted match while it is in view; else from the top row.
    let visible = model.search.match.map { $0.row >= model.top && $0.row < model.top + model.viewport } ?? false
    let from = visible ? model.search.match.map { ($0.row, $0.characters.lowerBound) }! : (model.top, backward ? 0 : -1)
    func after(_ m: SearchMatch) -> Bool { m.row > from.0 || (m.row == from.0 && m.characters.lowerBound > from.1) }
    func before(_ m: SearchMatch) -> Bool { m.row < from.0 || (m.row == from.0 && m.characters.lowerBound < from.1) }
    let next = backward ? matches.last(where: before) : matches.first(where: after)
    let found = next ?? (backward ? matches.last! : matches.first!)
    let index = matches.firstIndex(of: found)! + 1
    model.search.match = found
    model.search.message = "\(index)/\(matches.count)" + (next == nil ? (backward ? ", wrapped to the end" : ", wrapped to the top") : "")
    return move(to: found.row, &model)
}

/// Every match in the layout, in reading order.
func allMatches(of pattern: String, in layout: Layout) -> [SearchMatch] {
    let exact = pattern.contains { $0.isUppercase }
    func fold(_ character: Character) -> String { exact ? String(character) : character.lowercased() }
    let needle = Array(SafeText.display(pattern)).map(fold)
    guard !needle.isEmpty else { return [] }
    var matches = [SearchMatch]()
    for (number, row) in layout.rows.enumerated() {
        let text = searchText(row).map(fold)
        guard text.count >= needle.count else { continue }
        var start = 0
        while start + needle.count <= text.count {
            if text[start..<start + needle.count].elementsEqual(needle) {
                matches.append(SearchMatch(row: number, characters: start..<start + needle.count))
                start += needle.count
            } else {
                start += 1
            }
        }
    }
    return matches
}

/// The status line's search field, just after a search: the pattern and what it found
/// (`/install 2/5`, `?install 1/5`), shortened to what it found on a narrow terminal.
func searchField(_ model: ViewerModel) -> StatusField? {
    guard let message = model.search.message else { return nil }
    let importance = model.search.match == nil ? StatusImportance.problem : StatusImportance.connection
    guard let pattern = model.search.pattern else { return StatusField(message, importance) }
    let mark = model.search.promptBackward ? "?" : "/"  // as it was typed: `?` searched backward
    return StatusField(full: "\(mark)\(pattern) \(message)", StatusImportance.roleHint, short: message, importance)
}

/// The prompt line that stands in for the status line while a pattern is typed.
func searchPrompt(_ model: ViewerModel) -> String? {
    guard let typed = model.search.prompt else { return nil }
    let hint = model.width >= 60 ? "   (Enter: find; empty: the last pattern; Esc: cancel)" : ""
    return " " + (model.search.promptBackward ? "?" : "/") + typed + "▏" + hint
}
