/// The close sequence: flush what is queued, send TLS close_notify, shut down the sending
/// side, read until the peer closes (at most `lingerTicks`), then release the connection.
extension Channel {
    /// How long a graceful close may take to flush and hear the peer close: 2 ticks of the
    /// loop's coarse timer, so 2 to 3 s (no deadline is stored per connection).
    static let lingerTicks: UInt8 = 2

    /// Closes gracefully: flush the queue, shut down the sending side (after TLS
    /// close_notify), read until the peer closes, then release the socket. Gives up
    /// after `lingerTicks`.
    public func close() {
        loop.assertInEventLoop()
        if state == .connecting { closeNow(); return }
        guard state == .open else { return }
        state = .flushing
        closingTicks = 0
        resumeReading()
        if queue.isEmpty { finishFlushing() } else { loop.markDirty(self) }
    }

    /// Closes at once, dropping anything queued.
    public func abort() {
        loop.assertInEventLoop()
        closeNow()
    }

    /// Everything queued went out: close_notify, then the sending side's end.
    func finishFlushing() {
        tls?.shutdown()
        loop.io.shutdownSending(self)
        state = .lingering
        setWatchingWritable(false)
    }

    /// A tick while closing: past `lingerTicks`, give up on the peer.
    func tickClosing() {
        closingTicks += 1
        if closingTicks > Self.lingerTicks { closeNow() }
    }

    /// Peer hung up or errored.
    func hangUp() { closeNow() }

    func closeNow() {
        guard !isClosed else { return }
        state = .closed
        queue.removeAll()
        latest = nil
        loop.unregister(self)
        tls = nil
        loop.io.close(self)
        let handler = self.handler
        self.handler = nil
        handler?.channelClosed(self)
    }
}
