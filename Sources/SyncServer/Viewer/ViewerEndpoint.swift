package import Access
import HTTP1
import Documents
import Hub
import ScrollModel
import WebSocketCore

/// The browser viewer (README, *Follow from a browser*): a plain browser visit to
/// `/rooms/NAME` (`Accept: text/html`, no `Upgrade`) gets a page that renders the room's
/// document and follows its presenter over the room's WebSocket; `/rooms/NAME/document` is
/// the document as HTML made from the normative block model (each block's element has the
/// block's id), `/viewer.js` and `/viewer.css` the page's script and style, and
/// `/viewer-follow.js` the script's PROTOCOL.md §3 mapping, `/viewer-player.js` its player of
/// recordings (a recording's page is `RecordingEndpoint`'s). No outside
/// network: the page loads only these, under a Content-Security-Policy of `'self'`.
struct ViewerEndpoint: HTTPEndpoint {
    let hub: LocalRoomHub
    /// The room endpoint, whose rules for tokens the document follows.
    let rooms: RoomEndpoint
    /// Names the terminal one-liner on a room's page.
    var tty: TTYEndpoint?
    var path: String { "/viewer.js" }

    func matches(_ request: HTTPRequest, path: Substring) -> Bool { route(request, path: path) != nil }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        switch route(request, path: request.path) {
        case .page(let room):
            let terminal = tty?.oneLiner(room: room, host: request.value(.host))
            return Self.answer(ViewerAssets.page(room: room, terminal: terminal), type: "text/html; charset=utf-8")
        case .badName(let name):
            // A browser gets a page that says why, not a WebSocket refusal it cannot show.
            return Self.answer(ViewerAssets.problem(title: "No such room name",
                                                    detail: "“\(name)” is not a room name: room names are 1 to 64 characters of A–Z a–z 0–9 . _ - (not . or ..)."),
                               type: "text/html; charset=utf-8", status: 400)
        case .document(let room):
            // A private room's document goes only to who may follow it: its follow key or a token.
            guard let query = try? Query(request.query) else { return .error(400, "malformed query") }
            let claims: TokenClaims?
            switch rooms.authorize(request, query: query, room: room, role: .follower) {
            case .failure(let refusal): return refusal.response
            case .success(let given): claims = given
            }
            let shared: SharedDocument
            switch hub.document(ofRoom: room, followKey: query["followKey"], authorized: claims != nil, address: address) {
            case .document(let document): shared = document
            case .none: return .error(404, "room \(room) has no document yet")
            case .refused(let status, let reason):
                return .error(status, reason, headers: status == 401 ? [("WWW-Authenticate", "FollowKey")] : [])
            }
            let document = Document(text: shared.text, format: shared.format, name: shared.name)
            var response = Self.answer(DocumentHTML.render(document), type: "text/html; charset=utf-8")
            response.headers.append(("X-Document-Fingerprint", shared.fingerprint))
            return response
        case .script: return Self.answer(ViewerAssets.script, type: "text/javascript; charset=utf-8")
        case .followScript: return Self.answer(ViewerAssets.followScript, type: "text/javascript; charset=utf-8")
        case .playerScript: return Self.answer(ViewerAssets.playerScript, type: "text/javascript; charset=utf-8")
        case .style: return Self.answer(ViewerAssets.style, type: "text/css; charset=utf-8")
        case nil: return .error(404, "no viewer resource at \(request.path)")
        }
    }

    enum Resource: Equatable {
        case page(String), document(String), script, followScript, playerScript, style
        /// A browser asked for a room by a name no room can have (the name as decoded).
        case badName(String)
    }

    func route(_ request: HTTPRequest, path: Substring) -> Resource? {
        // Bytes first: a WebSocket join to /rooms/NAME passes here before its upgrade.
        let bytes = path.utf8
        guard bytes.starts(with: "/rooms/".utf8) else {
            if bytes.elementsEqual("/viewer.js".utf8) { return .script }
            if bytes.elementsEqual("/viewer-follow.js".utf8) { return .followScript }
            if bytes.elementsEqual("/viewer-player.js".utf8) { return .playerScript }
            if bytes.elementsEqual("/viewer.css".utf8) { return .style }
            return nil
        }
        guard request.value(.upgrade) == nil else { return nil }
        let rest = path.dropFirst("/rooms/".count)
        if rest.hasSuffix("/document") {
            let room = String(rest.dropLast("/document".count))
            return RoomEndpoint.isValidRoomName(room) ? .document(room) : nil
        }
        let room = String(rest)
        guard request.value(.accept)?.contains("text/html") == true else { return nil }
        guard RoomEndpoint.isValidRoomName(room) else { return .badName(Query.decode(rest) ?? room) }
        return .page(room)
    }

    static func answer(_ text: String, type: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [
            ("Content-Type", type),
            ("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("Cache-Control", "no-store"),
        ], body: Array(text.utf8))
    }
}
