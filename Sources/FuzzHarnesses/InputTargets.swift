import Foundation
import Hub
import Operations
import ScrollModel
import SyncClient
import SyncServer
import TerminalUI

/// Documents, stored files, configuration, drive scripts and URLs.
extension FuzzTarget {
    /// A document (Markdown or text by the second byte) laid out at a width from the first:
    /// block ids unique, every row within the width, row → anchor → row in the same block.
    static func markdown(_ data: [UInt8]) throws(FuzzFinding) {
        guard data.count >= 2 else { return }
        let width = 10 + Int(data[0]) % 190
        let format: SharedDocument.Format = data[1] & 1 == 0 ? .markdown : .text
        let document = Document(text: String(decoding: data[2...], as: UTF8.self), format: format, name: "fuzz")
        try expect(Set(document.blocks.map(\.id)).count == document.blocks.count, "repeated block ids: \(document.blocks.map(\.id))")
        let layout = Layout(document: document, width: width)
        for (index, row) in layout.rows.enumerated() {
            let columns = row.text.unicodeScalars.reduce(0) { $0 + DisplayWidth.of($1) }
            try expect(columns <= layout.width, "row \(index) is \(columns) columns at width \(layout.width)")
            guard let anchor = layout.anchor(atRow: index) else { throw FuzzFinding("no anchor at row \(index)") }
            let back = layout.row(for: anchor)
            try expect(back.map { layout.rows[$0].block } == row.block, "row \(index) → \(anchor) → row \(back.map(String.init) ?? "nil")")
        }
    }

    /// Any bytes decode or are refused; any payload encodes to a file that decodes back exactly.
    static func storeFile(_ data: [UInt8]) throws(FuzzFinding) {
        _ = StoreFile.decode(data)
        let keyed = data.first.map { $0 & 1 == 1 } ?? false
        let again = StoreFile.decode(StoreFile.encode(data, keyed: keyed, ceiling: data.count))
        guard case .success(let contents) = again else { throw FuzzFinding("an encoded file does not decode: \(again)") }
        try expect(contents.payload == data && contents.keyed == keyed && contents.ceiling == data.count, "encode → decode changed the file")
    }

    /// A configuration file is applied and validated, or refused with a message that says why.
    static func configuration(_ data: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: data, as: UTF8.self)
        var configuration = ServerConfiguration()
        do {
            let values = try Settings.fileValues(text, source: "fuzz")
            try Settings.apply(values, to: &configuration, source: "fuzz")
            try Settings.validate(configuration)
        } catch {
            try expect(!error.message.isEmpty, "a configuration error without a message")
            return
        }
        _ = Settings.describe(configuration)
    }

    /// A script parses to commands within the bounds `drive` relies on (finite offsets ≥ 0,
    /// fractions 0…1, durations up to a day, rates up to 1 kHz, so a sweep's step count fits an
    /// Int), on increasing lines of the input; an error names a line of the input.
    static func driveScript(_ data: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: data, as: UTF8.self)
        let lineCount = DriveScript.lines(of: text).count
        // The same script with CRLF line ends parses the same (or fails on the same line).
        if !data.contains(13) {
            let crlf = text.replacingOccurrences(of: "\n", with: "\r\n")
            try expect(Result { () throws(DriveScript.ParseError) in try DriveScript(text) } == Result { () throws(DriveScript.ParseError) in try DriveScript(crlf) },
                       "the script parses differently with CRLF line ends")
        }
        let script: DriveScript
        do {
            script = try DriveScript(text)
        } catch {
            try expect((1...lineCount).contains(error.line) && !error.message.isEmpty, "an error on line \(error.line) of \(lineCount)")
            return
        }
        try expect(zip(script.lines, script.lines.dropFirst()).allSatisfy { $0.number < $1.number }
                   && script.lines.allSatisfy { (1...lineCount).contains($0.number) }, "line numbers out of order or range")
        for line in script.lines {
            switch line.command {
            case .scroll(let offset): try expect(offset.isFinite && offset >= 0, "scroll \(offset)")
            case .by(let delta): try expect(delta.isFinite, "by \(delta)")
            case .goto(_, let fraction): try expect((0...1).contains(fraction), "goto fraction \(fraction)")
            case .sweep(let from, let to, let seconds, let hz):
                try expect([from, to].allSatisfy { $0.isFinite && $0 >= 0 }, "sweep from \(from) to \(to)")
                try expect((0...DriveScript.longestDuration).contains(seconds) && hz > 0 && hz <= 1000, "sweep over \(seconds) s at \(hz) Hz")
            case .sleep(let seconds): try expect((0...DriveScript.longestDuration).contains(seconds), "sleep \(seconds) s")
            case .expectFollowers(_, let bound): try expect(bound >= 0, "expect followers \(bound)")
            case .share(let path): try expect(!path.isEmpty, "share with no path")
            case .take, .release: break
            }
        }
    }

    /// A URL that parses prints as text that parses back to the same URL, and its request
    /// target (also one set by code) is printable ASCII without spaces: it cannot end the
    /// request line.
    static func websocketURL(_ data: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: data, as: UTF8.self)
        func printable(_ target: String) -> Bool { target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } && target.hasPrefix("/") }
        guard let url = WebSocketURL(text) else { return }
        let again = WebSocketURL(url.description)
        try expect(again == url, "\(url.description) does not parse back to itself")
        try expect(printable(url.target), "the target \(url.target.debugDescription) can break the request line")
        let set = url.with(target: "/" + text)
        try expect(printable(set.target) && set.with(target: set.target) == set, "with(target:) gave \(set.target.debugDescription)")
        // What `record` writes in a recording's header, the reader takes: no secret however spelled.
        try expect(QueryText.secretProblem(inURL: url.withoutSecrets) == nil, "\(url.withoutSecrets) keeps a secret")
    }

    /// Any bytes read as a recording or are refused naming a line within the file, no later
    /// than the first line that is longer than any event or not UTF-8 (refused before it is
    /// decoded); what reads has no secret in its URL and writes back to lines that read as the
    /// same recording, each time rounded to the millisecond (exactly: a half-millisecond
    /// tolerance failed on 2.2055 by float error). A first byte of 0x80 or more makes the
    /// document limit its low six bits, so that short inputs reach the line bound.
    static func recording(_ data: [UInt8]) throws(FuzzFinding) {
        var limits = ClientMessage.Limits()
        if let first = data.first, first & 0x80 != 0 { limits.maxDocumentBytes = Int(first & 0x3F) }
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let firstBad = lines.firstIndex { $0.count > Recording.maxLineBytes(limits) || String(validating: $0, as: UTF8.self) == nil }
        let recording: Recording
        do {
            recording = try Recording.read(data, limits: limits)
        } catch {
            try expect(error.line >= 1 && error.line <= max(1, lines.count) + 1, "a problem on line \(error.line) of \(lines.count)")
            if let firstBad { try expect(error.line <= firstBad + 1, "line \(firstBad + 1) is refused only at line \(error.line)") }
            return
        }
        try expect(firstBad == nil, "line \(firstBad.map { $0 + 1 } ?? 0) (too long or not UTF-8) was read")
        try expect(QueryText.secretProblem(inURL: recording.header.url) == nil, "the header's URL \(recording.header.url) holds a secret")
        let written = ([Recording.headerLine(recording.header)] + recording.events.map(Recording.eventLine)).joined(separator: [10])
        do {
            let again = try Recording.read(Array(written), limits: limits)
            try expect(again.header == recording.header, "the header reads back differently")
            try expect(again.events.count == recording.events.count, "\(again.events.count) events read back, not \(recording.events.count)")
            for (a, b) in zip(again.events, recording.events) {
                try expect(a.message == b.message, "an event reads back differently: \(a.message) ≠ \(b.message)")
                let toTheMillisecond = (b.seconds * 1000).rounded() / 1000
                try expect(a.seconds == toTheMillisecond, "a time \(b.seconds) reads back as \(a.seconds), not \(toTheMillisecond)")
            }
        } catch {
            throw FuzzFinding("what was read does not read back: \(error)")
        }
    }
}
