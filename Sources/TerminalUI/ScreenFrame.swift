extension Screen {
    /// The whole screen as one frame for a terminal this program does not own (`curl` on the
    /// server's `/rooms/NAME/tty`, an asciicast): cursor home, every line (each exactly the
    /// screen's width, `\r\n` between them), then clear to the end of the screen. A frame
    /// stands alone: it draws the whole view over whatever the terminal showed.
    public var frame: String { "\u{1B}[H" + lines.joined(separator: "\r\n") + "\u{1B}[J" }
}
