import Bytes

/// The conflation slot: one replaceable message per channel, waiting behind everything
/// queued before it; a newer one replaces it there (STYLE 7, uWS `TopicTree::drain`).
extension Channel {
    /// Queues the newest version of a replaceable message (conflation). It waits in a
    /// one-message slot until the socket has taken everything queued before it; a newer
    /// one replaces it there. A slow reader thus holds at most one stale message and
    /// always ends with the newest. Returns true when an older message was replaced.
    @discardableResult
    public func enqueueLatest(_ bytes: SharedBytes) -> Bool {
        let loop = self.loop
        loop.assertInEventLoop()
        guard state == .open else { return false }
        let replaced = latest != nil
        latest = bytes
        flags[.queuedSinceTick] = true
        loop.markDirty(self)
        return replaced
    }

    /// Moves the slot's message to the end of the write queue: before something newer is
    /// queued (order is kept), or when the queue has drained and the slot's turn has come.
    @inline(__always)
    func queueLatest() {
        guard let waiting = latest else { return }
        queue.append(waiting)
        latest = nil
    }
}
