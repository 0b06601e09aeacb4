// Inline markup as terminal styles (SGR), for rows already cut to the screen.
import Documents

extension InlineMarkup {
    /// `text` (already cut to the screen) with its markers as SGR sequences; `base` is the
    /// row's own style, restored after each change. `highlight` (characters of the text
    /// without its markers) shows inverse: a search match. Only these constant sequences
    /// are written; the text itself was made safe by `fit`.
    static func render(_ text: String, base: String, highlight: Range<Int>? = nil) -> String {
        guard highlight != nil || text.unicodeScalars.contains(where: isMarker) else { return base + text }
        var out = base
        var active: [Style] = []
        var shown = 0
        var inMatch = false
        func restyle() -> String { ANSI.reset + base + active.map(\.sequence).joined() + (inMatch ? ANSI.inverse : "") }
        for character in text {
            var counted = false
            for scalar in character.unicodeScalars {
                if isMarker(scalar) {
                    let style = Style(rawValue: scalar.value & ~1)!
                    if scalar.value & 1 == 0 { active.append(style) } else if let at = active.lastIndex(of: style) { active.remove(at: at) }
                    if inMatch, shown == highlight?.upperBound { inMatch = false }
                    out += restyle()
                    continue
                }
                if !counted, let highlight {
                    counted = true
                    if shown == highlight.upperBound, inMatch { inMatch = false; out += restyle() }
                    if shown == highlight.lowerBound { inMatch = true; out += ANSI.inverse }
                    shown += 1
                }
                out.unicodeScalars.append(scalar)
            }
        }
        if inMatch { out += ANSI.reset + base }
        return out
    }
}

extension InlineMarkup.Style {
    /// Code tokens use the basic colours and dim/bold only, foreground only, which every
    /// terminal maps to colours readable on its own background, dark or light (no yellow or
    /// blue, which vanish on one of them).
    var sequence: String {
        switch self {
        case .strong: ANSI.bold
        case .emphasis: ANSI.italic
        case .code: ANSI.cyan
        case .link: ANSI.dim
        case .keyword: ANSI.bold + ANSI.magenta
        case .string: ANSI.green
        case .comment: ANSI.dim + ANSI.italic
        case .number: ANSI.red
        case .type: ANSI.cyan
        case .inserted: ANSI.green
        case .deleted: ANSI.red
        }
    }
}
