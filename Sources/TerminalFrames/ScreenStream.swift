import Bytes
import TextSafety

/// The bytes of a terminal stream: an HTTP/1.1 head, then one chunk per frame, then the end.
public enum ScreenStream {
    /// The answer's head, and a first chunk that clears the screen once (a frame clears only
    /// what it does not draw over).
    public static let head: SharedBytes = {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nTransfer-Encoding: chunked\r\n"
            + "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
        return SharedBytes(Array(head.utf8) + chunkBytes("\u{1B}[H\u{1B}[2J"))
    }()

    /// What a reader is sent after `keepAliveSeconds` without a frame (a quiet room), so that a
    /// proxy between it and the server keeps the stream open: an SGR reset, which changes
    /// nothing on the screen (every frame's status line ends in one, and the cursor stays where
    /// it is); a chunk of no bytes cannot serve, as it ends the body. 25 s: under the idle
    /// limits proxies ship with (nginx's `proxy_read_timeout` and AWS load balancers' idle
    /// timeout are 60 s, HAProxy's examples use 30 s or more), with a tick (1 s) to spare.
    public static let keepAlive = SharedBytes(chunkBytes("\u{1B}[0m"))
    public static let keepAliveSeconds: UInt32 = 25

    /// `text` as one chunk (RFC 9112 §7.1): its length in hex, CRLF, the text, CRLF.
    public static func chunk(_ text: String) -> SharedBytes { SharedBytes(chunkBytes(text)) }

    private static func chunkBytes(_ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { utf8 in
            Array(String(utf8.count, radix: 16).utf8) + [13, 10] + Array(utf8) + [13, 10]
        }
    }

    /// The last chunk: why the stream ends (its control characters as pictures) below the
    /// view, then the chunked body's end.
    public static func end(reason: String) -> SharedBytes {
        SharedBytes(Array(chunk("\u{1B}[0m\r\n" + SafeText.display(reason) + "\r\n").buffer) + Array("0\r\n\r\n".utf8))
    }
}
