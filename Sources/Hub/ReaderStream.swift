import Bytes
import TerminalFrames
import WebSocketChannel

/// A terminal reader's stream as its link carries it: the size its room renders it at, and
/// `ScreenStream`'s keep-alive and end (the link knows no more of it than `LinkStream` says).
package final class ReaderStream: LinkStream {
    /// The size it asked for, then the one its room gives it (`SizeTable`) once it is in.
    package var size: ScreenSize

    package init(size: ScreenSize) { self.size = size }

    package var keepAlive: SharedBytes { ScreenStream.keepAlive }
    package var keepAliveSeconds: UInt32 { ScreenStream.keepAliveSeconds }

    /// The reason below the view, then the end of the chunked body.
    package func end(reason: String) -> SharedBytes { ScreenStream.end(reason: reason) }
}

extension WebSocketLink {
    /// A terminal reader's size (as its room renders it, once it is in), or nil for a WebSocket.
    package var screenSize: ScreenSize? {
        get { (stream as? ReaderStream)?.size }
        set { if let newValue, let reader = stream as? ReaderStream { reader.size = newValue } }
    }
}
