import CZlib

/// Why a compressed message could not be inflated.
public enum InflateError: Error, Equatable, Sendable {
    /// The message inflates to more than the limit; nothing past the limit was kept.
    case tooLarge(limit: Int)
    /// The input is not a valid raw DEFLATE stream.
    case corrupt(String)
}

/// Bounded raw-DEFLATE decompression for permessage-deflate (RFC 7692 §7.2.2).
///
/// The zlib stream is created on first use, so an idle connection costs nothing.
/// Output never grows past the caller's limit by more than one 16 KiB step, so a
/// small frame that inflates to gigabytes is refused rather than allocated.
public final class Inflater {
    private let windowBits: Int32
    private let resetAfterMessage: Bool
    private var stream = z_stream()
    private var initialized = false
    private var scratch = [UInt8](repeating: 0, count: 0)
    private static let step = 16 * 1024
    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// - Parameters:
    ///   - windowBits: the peer's LZ77 window (8…15). zlib's inflate accepts all of them.
    ///   - noContextTakeover: forget the window after every message (the peer resets too).
    public init(windowBits: Int = 15, noContextTakeover: Bool = false) {
        self.windowBits = Int32(max(8, min(15, windowBits)))
        self.resetAfterMessage = noContextTakeover
    }

    deinit {
        if initialized { inflateEnd(&stream) }
    }

    /// Inflates one fragment of a message and appends the result to `output`.
    ///
    /// - Parameters:
    ///   - final: this fragment ends the message: the RFC 7692 tail `00 00 ff ff` is
    ///     appended before inflating, and the window is reset if context takeover is off.
    ///   - limit: the most bytes `output` may hold.
    public func inflate(
        _ input: UnsafeRawBufferPointer, final: Bool, into output: inout [UInt8], limit: Int
    ) throws(InflateError) {
        try setUp()
        try run(input, into: &output, limit: limit)
        if final {
            do {
                try Self.tail.withUnsafeBytes { try run($0, into: &output, limit: limit) }
            } catch let error as InflateError {
                throw error
            } catch {
                throw .corrupt("\(error)")
            }
            if resetAfterMessage { inflateReset(&stream) }
        }
    }

    /// Drops the window, e.g. after a failed message.
    public func reset() {
        if initialized { inflateReset(&stream) }
    }

    private func setUp() throws(InflateError) {
        guard !initialized else { return }
        let status = scrollsync_inflateInit2(&stream, -windowBits)
        guard status == Z_OK else { throw .corrupt("inflateInit2 failed (\(status))") }
        initialized = true
        scratch = [UInt8](repeating: 0, count: Self.step)
    }

    private func run(
        _ input: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int
    ) throws(InflateError) {
        guard input.count > 0 else { return }
        stream.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        var status: Int32 = Z_OK
        repeat {
            let produced: Int = scratch.withUnsafeMutableBytes { chunk in
                stream.next_out = chunk.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(chunk.count)
                status = CZlib.inflate(&stream, Z_SYNC_FLUSH)
                return chunk.count - Int(stream.avail_out)
            }
            if status == Z_STREAM_END {
                // A final deflate block ended the stream; later input starts a new one.
                inflateReset(&stream)
                status = Z_OK
            }
            // What came out before an error is kept (up to the limit), so that the caller sees
            // the same output whether the input came whole or in pieces.
            if produced > 0 {
                let room = limit - output.count
                scratch.withUnsafeBufferPointer { output.append(contentsOf: $0[0..<min(produced, room)]) }
                guard produced <= room else {
                    stream.next_in = nil
                    stream.avail_in = 0
                    throw .tooLarge(limit: limit)
                }
            }
            guard status == Z_OK || status == Z_BUF_ERROR else {
                let message = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                stream.next_in = nil
                stream.avail_in = 0
                throw .corrupt(message)
            }
            if produced == 0 && status == Z_BUF_ERROR { break }
        } while stream.avail_in > 0 || stream.avail_out == 0
        stream.next_in = nil
    }
}
