import Bytes
import Deflate

/// What a connection holds only when it needs it: compression, a message that arrives in
/// pieces, a test's masking keys (an idle server connection carries none of them).
extension WebSocketConnection {
    /// permessage-deflate, when agreed: held apart, so a connection without it does not
    /// carry its state.
    final class Compression {
        let parameters: PerMessageDeflate
        let threshold: Int
        let deflater: Deflater?
        let inflater: Inflater?
        /// Scratch space for one compressed message.
        var compressed: [UInt8] = []

        init(parameters: PerMessageDeflate, threshold: Int, deflater: Deflater?, inflater: Inflater?) {
            self.parameters = parameters
            self.threshold = threshold
            self.deflater = deflater
            self.inflater = inflater
        }
    }

    /// Payload that arrives in pieces (a message over several frames or reads, a control
    /// frame over several reads), allocated the first time that happens: most connections
    /// get every message whole in one read and never need it.
    ///
    /// The message buffer's storage is counted against the process's `MessageBudget` (when
    /// the caller gives one), and given back when it is dropped or the box goes.
    final class Pieces {
        var message: [UInt8] = []
        var control: [UInt8] = []
        let budget: MessageBudget?
        /// Bytes of `message`'s storage taken from the budget.
        var accounted = 0
        /// Ticks (seconds) the current message has been unfinished.
        var unfinishedTicks: UInt16 = 0

        init(budget: MessageBudget?) { self.budget = budget }

        deinit { budget?.release(accounted) }

        /// Brings the budget up to date with `message`'s storage; false (and nothing taken)
        /// when the budget cannot cover its growth.
        func account() -> Bool {
            let delta = message.capacity - accounted
            if delta > 0 {
                guard budget?.reserve(delta) ?? true else { return false }
            } else {
                budget?.release(-delta)
            }
            accounted = message.capacity
            return true
        }

        /// Frees the message buffer (a large one is not kept for the next message).
        func dropMessage() {
            message = []
            _ = account()
        }
    }

    /// What few connections carry (see `WebSocketConnection.rare`).
    final class Rare {
        let compression: Compression?
        /// Where a client's masking keys come from when the caller chooses them.
        let maskingKeys: (() -> UInt32)?
        init(compression: Compression?, maskingKeys: (() -> UInt32)?) {
            self.compression = compression
            self.maskingKeys = maskingKeys
        }
    }
}
