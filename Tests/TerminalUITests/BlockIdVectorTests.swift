import Foundation
import ScrollModel
import Testing
@testable import TerminalUI

/// The block-id vectors of Protocol/vectors/block-ids.json (PROTOCOL.md §7), which any other
/// renderer can check itself against.
@Suite("Block ids (PROTOCOL.md §7)")
struct BlockIdVectorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let format: SharedDocument.Format
        let text: String
        let ids: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Protocol/vectors/block-ids.json")
        guard let data = try? Data(contentsOf: url), let json = try? JSON.parse(String(decoding: data, as: UTF8.self)) else { return [] }
        return json["cases"].map(Self.elements)?.compactMap { item in
            guard let name = item["name"]?.string, let format = item["format"]?.string.flatMap(SharedDocument.Format.init(rawValue:)),
                  let text = item["text"]?.string, let ids = item["ids"].map(Self.elements)?.compactMap(\.string) else { return nil }
            return Case(name: name, format: format, text: text, ids: ids)
        } ?? []
    }()

    static func elements(_ json: JSON) -> [JSON] { if case .array(let items) = json { items } else { [] } }

    @Test func theVectorsAreThere() { #expect(Self.cases.count >= 8) }

    @Test(arguments: cases)
    func idsMatch(_ vector: Case) {
        let document = Document(text: vector.text, format: vector.format, name: "v")
        #expect(document.blocks.map(\.id) == vector.ids)
        #expect(Set(document.blocks.map(\.id)).count == document.blocks.count, "ids are unique")
    }

    /// Every id in a layout maps back to its own block (the issue 22 finding: a repeated id
    /// sent followers to the later block).
    @Test(arguments: cases)
    func everyAnchorFindsItsBlock(_ vector: Case) {
        let layout = Layout(document: Document(text: vector.text, format: vector.format, name: "v"), width: 40)
        for (index, block) in layout.document.blocks.enumerated() {
            guard let row = layout.row(for: Anchor(id: block.id, fraction: 0)) else { Issue.record("\(block.id) not found"); continue }
            #expect(layout.rows[row].block == index, "\(block.id)")
        }
    }
}
