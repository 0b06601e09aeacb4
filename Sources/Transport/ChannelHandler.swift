/// What a connection's owner hears from the transport. Every call comes on the
/// channel's event loop thread.
public protocol ChannelHandler: AnyObject {
    /// An outgoing connection was established (client channels only).
    func channelActive(_ channel: Channel)
    /// Bytes arrived. The buffer belongs to the loop and is reused after the call, so
    /// keep nothing pointing into it; it may be modified in place (e.g. unmasked).
    func channelRead(_ channel: Channel, _ bytes: UnsafeMutableRawBufferPointer)
    /// The write queue drained below its low mark after having been over its high mark.
    func channelWritable(_ channel: Channel)
    /// The loop's coarse timer (about once a second), for timeouts.
    func channelTick(_ channel: Channel, now: UInt64)
    /// The connection is gone; called exactly once, after which the channel is inert.
    func channelClosed(_ channel: Channel)
    /// The server is shutting down: say goodbye and close (the default closes gracefully).
    func channelShutdownRequested(_ channel: Channel)
    /// TLS failed (`TLSFailure` says how); `channelClosed` follows at once.
    func channelFailed(_ channel: Channel, _ failure: TLSFailure)
}

extension ChannelHandler {
    public func channelActive(_ channel: Channel) {}
    public func channelWritable(_ channel: Channel) {}
    public func channelTick(_ channel: Channel, now: UInt64) {}
    public func channelShutdownRequested(_ channel: Channel) { channel.close() }
    public func channelFailed(_ channel: Channel, _ failure: TLSFailure) {}
}

/// The answer to `Channel.enqueue`: backpressure made visible.
public enum SendStatus: Sendable, Equatable {
    /// Queued; the queue is under its high mark.
    case queued
    /// Queued, but the queue is over its high mark: stop producing until `channelWritable`.
    case overLimit
    /// The channel is closing or closed; nothing was queued.
    case dropped
}
