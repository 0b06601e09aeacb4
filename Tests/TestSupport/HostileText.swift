/// What strangers put in documents, names and headings to reach a reader's terminal (issue
/// 17's attack runs): clipboard write (OSC 52), clear screen, a hidden hyperlink (OSC 8),
/// leaving the alternate screen, a cursor report request (answered into the reader's stdin),
/// a C1 CSI, a bidi override, DEL, a device control string, CR LF and NUL.
public enum HostileText {
    public static let attacks = [
        "\u{1B}]52;c;cm0gLXJmIH4=\u{07}", "\u{1B}[2J", "\u{1B}]8;;https://evil.example\u{07}click\u{1B}]8;;\u{07}",
        "\u{1B}[?1049l", "\u{1B}[6n", "\u{9B}31m", "\u{202E}txt.exe", "x\u{7F}y", "\u{1B}P+q\u{1B}\\", "a\r\nb\u{0}c",
    ]

    /// The control characters of `text` outside a renderer's own `ESC [ digits ; m|H|J`
    /// sequences (C0, DEL and C1): none may reach a terminal from a document.
    public static func strayControls(_ text: String) -> [Unicode.Scalar] {
        text.replacing(/\x{1B}\[[0-9;]*[mHJ]/, with: "").unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\r" && $0 != "\n") || (0x7F...0x9F).contains($0.value)
        }
    }
}
