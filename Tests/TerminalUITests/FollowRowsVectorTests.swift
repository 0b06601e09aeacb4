import Foundation
import ScrollModel
import Testing
@testable import TerminalUI

/// The follow vectors of Protocol/vectors/follow-rows.json (PROTOCOL.md §3): a receiver's
/// block heights and a state give the top row and block it must show.
@Suite("Following a state (PROTOCOL.md §3 vectors)")
struct FollowRowsVectorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let width: Int
        let heights: [(id: String, rows: Int)]
        let viewport: Int
        let state: ScrollState
        let top: Int
        let block: String
        var testDescription: String { name }
    }

    static func vectors(_ name: String) -> JSON? {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Protocol/vectors/\(name)")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSON.parse(String(decoding: data, as: UTF8.self))
    }

    /// Layouts of one document by this renderer at three widths (the layout part is informative).
    static let file = vectors("follow-rows.json")
    /// Small layouts with the top row derived by hand from §3 (no renderer made them).
    static let byHand = vectors("follow-mapping.json")

    static func elements(_ json: JSON?) -> [JSON] { if case .array(let items)? = json { items } else { [] } }

    static let cases: [Case] = parse(file)
    static let handCases: [Case] = parse(byHand)

    static func parse(_ file: JSON?) -> [Case] {
        elements(file?["cases"]).compactMap { item in
            guard let name = item["name"]?.string, let viewport = item["viewport"]?.double,
                  let top = item["top"]?.double, let block = item["block"]?.string, let state = item["state"] else { return nil }
            let heights = elements(item["heights"]).compactMap { pair -> (String, Int)? in
                let parts = elements(pair)
                guard parts.count == 2, let id = parts[0].string, let rows = parts[1].double else { return nil }
                return (id, Int(rows))
            }
            let anchor = state["anchor"].flatMap { anchor in
                anchor["id"]?.string.map { Anchor(id: $0, fraction: anchor["fraction"]?.double ?? 0) }
            }
            let scroll = ScrollState(seq: 1, offset: state["offset"]?.double ?? 0, viewport: nil, content: nil, progress: state["progress"]?.double,
                                     direction: .none, anchor: anchor, atTop: state["atTop"]?.bool ?? false,
                                     atBottom: state["atBottom"]?.bool ?? false, by: "p", t: nil, doc: nil)
            return Case(name: name, width: Int(item["width"]?.double ?? 0), heights: heights, viewport: Int(viewport), state: scroll,
                        top: Int(top), block: block)
        }
    }

    @Test func theVectorsAreThere() {
        #expect(Self.handCases.count >= 15)
        #expect(Self.cases.count >= 27)
        #expect(Set(Self.cases.map(\.width)) == [30, 60, 200])
    }

    /// The normative part: heights and state in, top row and block out (the layout is not run).
    @Test(arguments: handCases + cases)
    func mapsToTheTopRow(_ vector: Case) throws {
        var start = [String: Int]()
        var height = [String: Int]()
        var row = 0
        for (id, rows) in vector.heights {
            start[id] = row
            height[id] = rows
            row += rows
        }
        let maxTop = max(0, row - vector.viewport)
        let anchorRow = vector.state.anchor.flatMap { anchor in
            start[anchor.id].map { Layout.row(start: $0, height: height[anchor.id] ?? 0, fraction: anchor.fraction) }
        }
        let top = followerTop(for: vector.state, anchorRow: anchorRow, maxTop: maxTop)
        #expect(top == vector.top)
        let block = try #require(vector.heights.first { (start[$0.id] ?? -1) <= top && top < (start[$0.id] ?? -1) + $0.rows })
        #expect(block.id == vector.block)
    }

    /// The informative part: this renderer lays the vectors' document out in those heights,
    /// and its follower arrives at the same row through its own layout.
    @Test(arguments: cases)
    func thisRendererArrivesThere(_ vector: Case) throws {
        let text = try #require(Self.file?["document"]?.string)
        let document = Document(text: text, format: .markdown, name: "v")
        let layout = Layout(document: document, width: vector.width)
        #expect(document.blocks.indices.map { layout.rowCount(ofBlock: $0) } == vector.heights.map(\.rows))
        var model = ViewerModel.follower(room: "r", localDocument: document, width: vector.width, height: vector.viewport + 2)
        _ = update(&model, .connection(.connected))
        try #require(model.viewport == vector.viewport)
        _ = update(&model, .server(.state(vector.state)))
        #expect(model.top == vector.top)
    }
}
