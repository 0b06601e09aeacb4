package import Access

/// How the embedded store writes one file: a header line that carries a SHA-256 of the
/// payload, then the payload (a wire message, or a key digest):
///
///     scrollsync-store 1 keyed=1 ceiling=8192 sha256=<64 hex digits>\n<payload>
///
/// `keyed` says whether the room had a presenter key (1) and a follow key (2, so 3 for both)
/// when the file was written (a room whose key file is then missing or damaged is restored
/// locked, never keyless; one whose follow key file is, private to everyone but presenters);
/// `ceiling` is the highest `seq` the room may have used (state files; 0 elsewhere).
/// A truncated, edited or otherwise damaged file fails the check instead of being read.
public enum StoreFile {
    public struct Contents: Equatable, Sendable {
        public var payload: [UInt8]
        public var keyed: Bool
        public var ceiling: Int
        /// The room had a follow key (it was private).
        public var followKeyed = false
    }

    static let magic = "scrollsync-store 1"

    /// The file's bytes for `payload`.
    public static func encode(_ payload: [UInt8], keyed: Bool, followKeyed: Bool = false, ceiling: Int = 0) -> [UInt8] {
        Array("\(magic) keyed=\((keyed ? 1 : 0) | (followKeyed ? 2 : 0)) ceiling=\(ceiling) sha256=\(Digest.sha256(payload))\n".utf8) + payload
    }

    /// The contents, or why the file cannot be trusted.
    public static func decode(_ bytes: [UInt8]) -> Result<Contents, StoreError> {
        guard let newline = bytes.firstIndex(of: 10) else { return .failure(StoreError(description: "no header line (truncated or not a store file)")) }
        let header = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ")
        guard header.count == 5, "\(header[0]) \(header[1])" == magic,
              header[2].hasPrefix("keyed="), let keyed = Int(header[2].dropFirst(6)), (0...3).contains(keyed),
              header[3].hasPrefix("ceiling="), let ceiling = Int(header[3].dropFirst(8)), ceiling >= 0,
              header[4].hasPrefix("sha256="), header[4].count == 71
        else { return .failure(StoreError(description: "malformed header")) }
        let payload = Array(bytes[(newline + 1)...])
        guard header[4].dropFirst(7) == Digest.sha256(payload) else {
            return .failure(StoreError(description: "checksum mismatch (the file was truncated or changed)"))
        }
        return .success(Contents(payload: payload, keyed: keyed & 1 != 0, ceiling: ceiling, followKeyed: keyed & 2 != 0))
    }
}
