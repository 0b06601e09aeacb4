import CZlib

/// Raw-DEFLATE compression of whole messages for permessage-deflate (RFC 7692 §7.2.1).
///
/// Each message is flushed with `Z_SYNC_FLUSH` and the trailing `00 00 ff ff` removed.
/// The zlib stream is created on first use, so a connection that never compresses
/// costs nothing.
public final class Deflater {
    private let windowBits: Int32
    private let level: Int32
    private let memLevel: Int32
    private let resetAfterMessage: Bool
    private var stream = z_stream()
    private var initialized = false
    private var scratch = [UInt8]()
    private static let step = 16 * 1024

    /// - Parameters:
    ///   - windowBits: LZ77 window, 9…15 (zlib cannot produce raw streams with 8).
    ///   - level: zlib level; 6 is zlib's default balance of speed and ratio.
    ///   - memLevel: zlib hash memory; 8 is zlib's default (about 128 KiB per stream).
    ///   - noContextTakeover: start every message with an empty window.
    public init(windowBits: Int = 15, level: Int32 = 6, memLevel: Int32 = 8, noContextTakeover: Bool = false) {
        self.windowBits = Int32(max(9, min(15, windowBits)))
        self.level = level
        self.memLevel = memLevel
        self.resetAfterMessage = noContextTakeover
    }

    deinit {
        if initialized { deflateEnd(&stream) }
    }

    /// Compresses one whole message and appends the deflate payload to `output`.
    public func compress(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        if !initialized {
            let status = scrollsync_deflateInit2(&stream, level, -windowBits, memLevel)
            precondition(status == Z_OK, "deflateInit2 failed (\(status))")
            initialized = true
            scratch = [UInt8](repeating: 0, count: Self.step)
        }
        let start = output.count
        stream.next_in = input.baseAddress.map {
            UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self))
        }
        stream.avail_in = uInt(input.count)
        repeat {
            let produced: Int = scratch.withUnsafeMutableBytes { chunk in
                stream.next_out = chunk.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(chunk.count)
                let status = deflate(&stream, Z_SYNC_FLUSH)
                precondition(status == Z_OK || status == Z_BUF_ERROR, "deflate failed (\(status))")
                return chunk.count - Int(stream.avail_out)
            }
            scratch.withUnsafeBufferPointer { output.append(contentsOf: $0[0..<produced]) }
        } while stream.avail_out == 0
        stream.next_in = nil
        // Z_SYNC_FLUSH always ends in an empty stored block: 00 00 ff ff.
        if output.count - start >= 4 { output.removeLast(4) }
        if output.count == start { output.append(0x00) }  // an empty message: one empty block
        if resetAfterMessage { deflateReset(&stream) }
    }
}
