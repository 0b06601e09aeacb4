import TextSafety
import ScrollModel

/// One frame: exactly `height` lines, each padded to `width` columns, with ANSI styles.
public struct Screen: Equatable, Sendable {
    public var lines: [String]
}

enum ANSI {
    static let reset = "\u{1B}[0m"
    static let bold = "\u{1B}[1m"
    static let dim = "\u{1B}[2m"
    static let italic = "\u{1B}[3m"
    static let underline = "\u{1B}[4m"
    static let inverse = "\u{1B}[7m"
    static let cyan = "\u{1B}[36m"
    static let red = "\u{1B}[31m"
    static let green = "\u{1B}[32m"
    static let magenta = "\u{1B}[35m"
    static let yellow = "\u{1B}[33m"
}

/// Renders the model (Elm's `view`): a sticky header, the document rows, a status line.
public func view(_ model: ViewerModel) -> Screen {
    var lines = [String]()
    lines.append(ANSI.inverse + fit(header(model), model.width) + ANSI.reset)
    let waiting = model.layout == nil ? waitingLines(model) : []
    for index in 0..<model.viewport {
        let rowIndex = model.top + index
        guard let layout = model.layout, rowIndex < layout.rowCount else {
            lines.append(fit(index < waiting.count ? waiting[index] : "", model.width))
            continue
        }
        let row = layout.rows[rowIndex]
        let base = switch row.style {
        case .heading(1): ANSI.bold + ANSI.underline
        case .heading: ANSI.bold
        case .quote: ANSI.italic + ANSI.dim
        // Highlighted code shows its plain text in the terminal's own colour, beside the tokens'.
        case .code: layout.document.blocks[row.block].language == nil ? ANSI.cyan : ""
        case .rule: ANSI.dim
        case .body, .blank: ""
        }
        let fitted = fit(row.text, model.width)
        // The search match, in characters of the row as shown (`searchText`).
        let match = model.search.match.flatMap { $0.row == rowIndex ? $0.characters : nil }
        var styled = InlineMarkup.render(fitted, base: base, highlight: match)
        if row.style == .code, fitted.hasPrefix(Layout.continuation) {
            let rest = match.map { max(0, $0.lowerBound - 1)..<max(0, $0.upperBound - 1) }
            styled = ANSI.dim + Layout.continuation + ANSI.reset + InlineMarkup.render(String(fitted.dropFirst()), base: base, highlight: rest)
        }
        lines.append(styled == fitted ? fitted : styled + ANSI.reset)  // plain body rows need no reset
    }
    if model.showingHelp {
        for (index, line) in helpBox(model).prefix(model.viewport).enumerated() { lines[1 + index] = ANSI.bold + fit(" " + line, model.width) + ANSI.reset }
    }
    // A problem's full reason the status line had no room for: on the rows above it.
    let statusLine = fitFields(statusFields(model), width: model.width)  // the fields once, for the line and its details
    let details = statusLine.details.flatMap { Layout.wrap(SafeText.display($0), width: max(1, model.width - 1)) }.prefix(max(1, model.viewport / 2))
    for (index, detail) in details.enumerated() {
        lines[lines.count - details.count + index] = ANSI.inverse + fit(" " + detail, model.width) + ANSI.reset
    }
    // The prompt stands in for the status line while a pattern is typed (as in `less`).
    lines.append(ANSI.inverse + fit(searchPrompt(model) ?? statusLine.line, model.width) + ANSI.reset)
    return Screen(lines: lines)
}

/// What a follower without a document is waiting for, and, once the room is live without
/// one (a presenter's document over the server's limit is refused), what it can do instead.
func waitingLines(_ model: ViewerModel) -> [String] {
    var paragraphs = ["waiting for the room's document…"]
    if model.connection == .connected, model.driver != nil || model.lastState != nil {
        paragraphs += ["", "The presenter has shared no document yet; one over the server's size limit is refused and never arrives.",
                       "To follow with your own copy: scrollsync follow URL --doc FILE. " + (model.readsKeys ? "q quits." : "Ctrl-C quits.")]
    }
    return paragraphs.flatMap { $0.isEmpty ? [""] : Layout.wrap($0, width: max(1, model.width - 2)).map { "  " + $0 } }
}

/// The pinned top line: the current section's heading, with the document title folded
/// in once the title has scrolled away. Where both do not fit, the title is shortened
/// first (`Scroll… › Install`), then the heading: the section is what a reader needs.
func header(_ model: ViewerModel) -> String {
    guard let layout = model.layout else { return " ScrollSync · room \(model.room)" }
    let title = SafeText.display(layout.document.title)
    guard model.top > 0 else { return " \(title)" }
    guard let section = layout.section(atRow: model.top) else { return " \(title)" }
    let heading = SafeText.display(InlineMarkup.plain(layout.document.blocks[section].text))
    // The heading itself on the top row needs no second copy above it.
    let topRow = layout.rows[min(model.top, layout.rowCount - 1)]
    let headingOnTop = topRow.block == section && topRow.style != .blank
    guard section != 0, heading != title, !headingOnTop else { return " \(title)" }
    let room = model.width - 1
    let headingWidth = DisplayWidth.of(heading)
    let titleRoom = room - headingWidth - 3
    if titleRoom >= DisplayWidth.of(title) { return " \(title) › \(heading)" }
    // At least a letter of the title and its ellipsis, or the heading alone.
    if titleRoom >= 2 { return " \(shortened(title, to: titleRoom)) › \(heading)" }
    return " " + shortened(heading, to: room)
}

/// `text` cut to `width` columns with `…` at the end when it is wider.
func shortened(_ text: String, to width: Int) -> String {
    guard DisplayWidth.of(text) > width else { return text }
    var out = ""
    var used = 0
    for character in text {
        let w = DisplayWidth.of(character)
        if used + w > width - 1 { break }
        out.append(character)
        used += w
    }
    while out.last == " " { out.removeLast() }
    return out + "…"
}

/// Cuts or pads `text` to exactly `width` columns. Every line of a screen passes here, so
/// no control character from a document, a name or a reason reaches the terminal: each is
/// shown as its picture (`SafeText`); the renderer alone writes escape sequences.
func fit(_ text: String, _ width: Int) -> String {
    // Printable ASCII (most rows of most documents): a column a byte, nothing to show as a picture.
    if text.utf8.allSatisfy({ 0x20...0x7E ~= $0 }) {
        let count = text.utf8.count
        return count >= width ? String(decoding: text.utf8.prefix(width), as: UTF8.self) : text + spaces(width - count)
    }
    var out = ""
    var used = 0
    for character in text {
        if SafeText.isSafe(character) {
            let w = DisplayWidth.of(character)
            if used + w > width { break }
            out.append(character)
            used += w
        } else {
            let shown = SafeText.display(String(character))  // "\r\n" is one Character and two pictures
            let w = DisplayWidth.of(shown)
            if used + w > width { break }
            out += shown
            used += w
        }
    }
    return out + spaces(width - used)
}

/// `count` spaces (none for less than one), made in one step: `String(repeating: " ", count:)`
/// appends them one at a time, which was the largest part of rendering a frame (perf, 2026-11-28).
func spaces(_ count: Int) -> String {
    guard count > 0 else { return "" }
    return String(unsafeUninitializedCapacity: count) { buffer in
        buffer.initialize(repeating: UInt8(ascii: " "))
        return count
    }
}

/// Writes only the lines that changed since the last frame.
public struct Renderer {
    private var previous: [String] = []

    public init() {}

    /// The bytes that turn the last frame into `screen`.
    public mutating func diff(to screen: Screen) -> String {
        var out = ""
        for (index, line) in screen.lines.enumerated() where index >= previous.count || previous[index] != line {
            out += "\u{1B}[\(index + 1);1H" + line
        }
        previous = screen.lines
        return out
    }

    /// Forget the last frame (after a resize the terminal may have changed anything).
    public mutating func invalidate() { previous = [] }
}
