// Inline markup as terminal styles (SGR), for rows already cut to the screen.
import Documents

extension InlineMarkup {
    /// `text` (already cut to the screen) with its markers as SGR sequences; `base` is the
    /// row's own style, restored after each change.
    static func render(_ text: String, base: String) -> String {
        guard text.unicodeScalars.contains(where: isMarker) else { return base + text }
        var out = base
        var active: [Style] = []
        for scalar in text.unicodeScalars {
            guard isMarker(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            let style = Style(rawValue: scalar.value & ~1)!
            if scalar.value & 1 == 0 { active.append(style) } else if let at = active.lastIndex(of: style) { active.remove(at: at) }
            out += ANSI.reset + base + active.map(\.sequence).joined()
        }
        return out
    }
}

extension InlineMarkup.Style {
    var sequence: String {
        switch self {
        case .strong: ANSI.bold
        case .emphasis: ANSI.italic
        case .code: ANSI.cyan
        case .link: ANSI.dim
        }
    }
}
