import CLinux
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// The terminal: raw mode and the alternate screen, restored on every way out —
/// normal exit, Ctrl-C, SIGTERM/SIGHUP, and crashes (SIGSEGV, SIGABRT, traps).
public enum Terminal {
    nonisolated(unsafe) private static var saved = termios()
    nonisolated(unsafe) private static var active = false
    /// Written to (one byte) on SIGWINCH, so a poll loop wakes up.
    nonisolated(unsafe) static var resizePipe: Int32 = -1

    private static let enter = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
    private static let leave = "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l"

    /// Whether standard output is a terminal.
    public static var isInteractive: Bool { isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1 }

    /// Rows and columns; 24×80 when unknown.
    public static var size: (width: Int, height: Int) {
        var rows: Int32 = 0
        var columns: Int32 = 0
        guard scrollsync_window_size(STDOUT_FILENO, &rows, &columns) == 0, rows > 0, columns > 0 else { return (80, 24) }
        return (Int(columns), Int(rows))
    }

    /// Switches to raw mode and the alternate screen.
    public static func start() {
        tcgetattr(STDIN_FILENO, &saved)
        var raw = saved
        cfmakeraw(&raw)
        raw.c_oflag |= tcflag_t(OPOST | ONLCR)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        active = true
        write(enter)
        for signal in [SIGTERM, SIGHUP, SIGQUIT] { install(signal, handler: { _ in Terminal.restore(); _exit(143) }) }
        for signal in [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE] {
            install(signal, handler: { number in
                Terminal.restore()
                Glibc.signal(number, SIG_DFL)
                raise(number)
            })
        }
        install(SIGWINCH, handler: { _ in
            var byte: UInt8 = 1
            if Terminal.resizePipe >= 0 { _ = Glibc.write(Terminal.resizePipe, &byte, 1) }
        })
        atexit { Terminal.restore() }
    }

    /// Puts the terminal back as it was. Safe to call more than once and from a signal handler.
    public static func restore() {
        guard active else { return }
        active = false
        write(leave)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
    }

    static func write(_ text: String) {
        var text = text
        _ = text.withUTF8 { writeAll(STDOUT_FILENO, UnsafeRawBufferPointer($0)) }  // a terminal that is gone has no one to tell
    }

    private static func install(_ signal: Int32, handler: @convention(c) (Int32) -> Void) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(signal, &action, nil)
    }
}

/// Decodes keys from terminal input bytes.
enum KeyDecoder {
    static func decode(_ bytes: [UInt8]) -> [Key] {
        var keys = [Key]()
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            if byte == 0x1B, i + 2 < bytes.count, bytes[i + 1] == UInt8(ascii: "[") || bytes[i + 1] == UInt8(ascii: "O") {
                let code = bytes[i + 2]
                var consumed = 3
                var key: Key?
                switch code {
                case UInt8(ascii: "A"): key = .up
                case UInt8(ascii: "B"): key = .down
                case UInt8(ascii: "C"): key = .right
                case UInt8(ascii: "D"): key = .left
                case UInt8(ascii: "H"): key = .home
                case UInt8(ascii: "F"): key = .end
                case UInt8(ascii: "P"): key = .f1  // ESC O P (xterm, tmux)
                case UInt8(ascii: "1") where i + 4 < bytes.count && bytes[i + 3] == UInt8(ascii: "1") && bytes[i + 4] == UInt8(ascii: "~"):
                    key = .f1  // ESC [ 1 1 ~ (rxvt, VT220)
                    consumed = 5
                case UInt8(ascii: "1")...UInt8(ascii: "8"):
                    if i + 3 < bytes.count, bytes[i + 3] == UInt8(ascii: "~") {
                        consumed = 4
                        key = switch code {
                        case UInt8(ascii: "5"): .pageUp
                        case UInt8(ascii: "6"): .pageDown
                        case UInt8(ascii: "1"), UInt8(ascii: "7"): .home
                        case UInt8(ascii: "4"), UInt8(ascii: "8"): .end
                        default: nil
                        }
                    }
                default: break
                }
                if let key { keys.append(key) }
                i += consumed
                continue
            }
            if byte == 0x03 { keys.append(.interrupt); i += 1; continue }
            if byte == 0x0D || byte == 0x0A { keys.append(.enter); i += 1; continue }
            if byte == 0x7F || byte == 0x08 { keys.append(.backspace); i += 1; continue }
            if byte == 0x1B { keys.append(.escape); i += 1; continue }  // alone: not the start of a sequence above
            if byte < 0x80 {
                if byte >= 0x20 { keys.append(.character(Character(Unicode.Scalar(byte)))) }
                i += 1
                continue
            }
            // A UTF-8 sequence: decode one character.
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            let end = min(bytes.count, i + length)
            if let character = String(validating: bytes[i..<end], as: UTF8.self)?.first { keys.append(.character(character)) }
            i = end
        }
        return keys
    }
}
