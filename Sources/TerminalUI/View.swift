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
        case .code: ANSI.cyan
        case .rule: ANSI.dim
        case .body, .blank: ""
        }
        let fitted = fit(row.text, model.width)
        let styled = InlineMarkup.render(fitted, base: base)
        lines.append(styled == fitted ? fitted : styled + ANSI.reset)  // plain body rows need no reset
    }
    lines.append(ANSI.inverse + fit(status(model), model.width) + ANSI.reset)
    return Screen(lines: lines)
}

/// What a follower without a document is waiting for, and, once the room is live without
/// one (a presenter's document over the server's limit is refused), what it can do instead.
func waitingLines(_ model: ViewerModel) -> [String] {
    var paragraphs = ["waiting for the room's document…"]
    if model.connection == .connected, model.driver != nil || model.lastState != nil {
        paragraphs += ["", "The presenter has shared no document yet; one over the server's size limit is refused and never arrives.",
                       "To follow with your own copy: scrollsync follow URL --doc FILE. q quits."]
    }
    return paragraphs.flatMap { $0.isEmpty ? [""] : Layout.wrap($0, width: max(1, model.width - 2)).map { "  " + $0 } }
}

/// The pinned top line: the current section's heading, with the document title folded
/// in once the title has scrolled away.
func header(_ model: ViewerModel) -> String {
    guard let layout = model.layout else { return " ScrollSync · room \(model.room)" }
    let title = layout.document.title
    guard model.top > 0 else { return " \(title)" }
    guard let section = layout.section(atRow: model.top) else { return " \(title)" }
    let heading = InlineMarkup.plain(layout.document.blocks[section].text)
    // The heading itself on the top row needs no second copy above it.
    let topRow = layout.rows[min(model.top, layout.rowCount - 1)]
    let headingOnTop = topRow.block == section && topRow.style != .blank
    return section == 0 || heading == title || headingOnTop ? " \(title)" : " \(title) › \(heading)"
}

/// The status line: role, connection, a refused message, direction and progress, driver,
/// followers, the link's round trip, when the presenter last moved, section. When they do not
/// fit, whole fields are left out, least important first (the section, then the time since
/// the presenter moved, the round trip, followers, driver…), never one cut in the middle.
func status(_ model: ViewerModel) -> String {
    fitFields(statusFields(model), width: model.width)
}

/// The status fields in display order, each with its importance (0 most important).
func statusFields(_ model: ViewerModel) -> [(importance: Int, text: String)] {
    var fields = [(importance: Int, text: String)]()
    switch model.role {
    case .presenter where model.isDriving: fields.append((0, "PRESENTING"))
    case .presenter where model.following: fields.append((0, "PRESENTER, FOLLOWING the driver (t: take control)"))
    case .presenter: fields.append((0, "PRESENTER, DETACHED (f: follow, t: take control)"))
    case .follower: fields.append((0, model.following ? "FOLLOWING" : "DETACHED – press f to follow"))
    }
    if model.documentDiffers { fields.append((3, "⚠ DOCUMENT DIFFERS from the room's")) }
    switch model.connection {
    case _ where model.playback != nil: fields.append((1, model.playback!))
    case .connecting: fields.append((1, "connecting…"))
    case .connected: fields.append((1, "● live"))
    case .waiting(let delay, let reason):
        let left = model.retryAtMs.map { max(0, Double($0 - model.nowMs) / 1000) } ?? delay
        fields.append((1, "○ offline, retry in \(formatSeconds(left)) (\(reason))"))
    case .refused(let reason): fields.append((1, "✕ \(reason) – press q"))
    case .stopped: fields.append((1, "○ closed"))
    }
    // A refusal of one message (too_large, rate_limited…) matters more than what follows.
    if let notice = model.notice { fields.append((2, notice)) }
    let arrow = switch model.direction {
    case .up: "↑"
    case .down: "↓"
    case .none: "·"
    }
    if let layout = model.layout, layout.rowCount > 0 {
        // A document that fits the screen has no progress to show: all of it is in view.
        fields.append((4, model.maxTop > 0 ? "\(arrow) \(Int((Double(model.top) / Double(model.maxTop) * 100).rounded()))%" : "\(arrow) all"))
    }
    if let driver = model.driver {
        fields.append((5, "driver " + (driver == model.you ? "you" : model.driverName ?? String(driver.prefix(6)))))
    } else {
        fields.append((5, "nobody driving"))
    }
    let followers = model.presence.followers
    fields.append((6, "\(followers) follower\(followers == 1 ? "" : "s")" + (model.presence.detached > 0 ? " (\(model.presence.detached) detached)" : "")))
    if let roundTrip = model.roundTripMs, model.connection == .connected { fields.append((8, "rtt \(roundTrip) ms")) }
    if model.role == .follower, let moved = model.movedAtMs, model.nowMs >= moved {
        let seconds = (model.nowMs - moved) / 1000
        fields.append((7, seconds < 1 ? "moved just now" : "moved \(seconds < 60 ? "\(seconds) s" : "\(seconds / 60) min") ago"))
    }
    if let layout = model.layout, let section = layout.section(atRow: model.top) {
        fields.append((9, "§ \(InlineMarkup.plain(layout.document.blocks[section].text))"))
    }
    return fields
}

/// The fields, two spaces apart after one leading space, within `width` columns: the least
/// important are left out whole until the rest fit; only the most important one alone is
/// ever cut (by `fit`).
func fitFields(_ fields: [(importance: Int, text: String)], width: Int) -> String {
    var kept = fields
    func line() -> String { " " + kept.map(\.text).joined(separator: "  ") }
    while kept.count > 1, DisplayWidth.of(SafeText.display(line())) > width {
        let least = kept.indices.max { kept[$0].importance < kept[$1].importance }!
        kept.remove(at: least)
    }
    return line()
}

private func formatSeconds(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10) s"
}

/// Cuts or pads `text` to exactly `width` columns. Every line of a screen passes here, so
/// no control character from a document, a name or a reason reaches the terminal: each is
/// shown as its picture (`SafeText`); the renderer alone writes escape sequences.
func fit(_ text: String, _ width: Int) -> String {
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
    return out + String(repeating: " ", count: max(0, width - used))
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
