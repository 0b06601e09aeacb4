/// Turns text that came from the network or a file into text that is safe to show: on a
/// terminal, in a log line or in an HTTP body. Text is data; only the renderer writes
/// escape sequences (like `less` without `-R`, and `ls` quoting control characters).
///
/// Every C0 control (U+0000–U+001F), DEL and C1 control (U+0080–U+009F) becomes a visible
/// picture of itself: C0 the Control Pictures (`ESC` shows as `␛`, so `ESC [ 2 J` shows as
/// `␛[2J` and does nothing), DEL `␡`, C1 `�`. The bidirectional overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069), which can make text display in another order than it
/// is read ("Trojan Source"), become `�` as well. Everything else is kept.
public enum SafeText {
    /// `text` with every unsafe scalar replaced by its picture; returns `text` itself
    /// (no copy) when nothing needs replacing.
    public static func display(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { picture(for: $0) != nil }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars { out.append(picture(for: scalar) ?? scalar) }
        return String(out)
    }

    public static func display(_ text: Substring) -> String { display(String(text)) }

    /// A document's text for layout: lines stay lines (`\n`; a `\r` before it goes), tabs
    /// become spaces up to the next multiple of `tabWidth` columns, every other control
    /// its picture.
    public static func document(_ text: String, tabWidth: Int = 4) -> String {
        guard text.unicodeScalars.contains(where: { $0 != "\n" && picture(for: $0) != nil }) else { return text }
        var out = String.UnicodeScalarView()
        var column = 0
        var scalars = text.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            switch scalar {
            case "\n":
                out.append(scalar)
                column = 0
            case "\r" where scalars.first == "\n":
                continue
            case "\t":
                let spaces = tabWidth - column % tabWidth
                out.append(contentsOf: repeatElement(" ", count: spaces))
                column += spaces
            default:
                out.append(picture(for: scalar) ?? scalar)
                column += 1
            }
        }
        return String(out)
    }

    /// The visible stand-in for an unsafe scalar, or nil when it is safe to show as it is.
    @inline(__always)
    public static func picture(for scalar: Unicode.Scalar) -> Unicode.Scalar? {
        let value = scalar.value
        if value < 0x20 { return Unicode.Scalar(0x2400 + value) }
        if value < 0x7F { return nil }
        if value == 0x7F { return "\u{2421}" }
        if value < 0xA0 { return "\u{FFFD}" }
        if (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value) { return "\u{FFFD}" }
        return nil
    }

    /// Whether every scalar of `character` is safe to show as it is.
    @inline(__always)
    public static func isSafe(_ character: Character) -> Bool {
        character.unicodeScalars.allSatisfy { picture(for: $0) == nil }
    }
}
