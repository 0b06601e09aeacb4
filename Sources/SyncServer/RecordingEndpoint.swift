package import Access
import HTTP1
import Hub
import ScrollModel
import Transport
import WebSocketCore

/// `GET /rooms/NAME/recording`: the room's recording (Protocol/RECORDING.md, served as
/// `application/x-ndjson`) for the admin token (`Authorization: Bearer`), the room's
/// presenter key (`key=…`, checked by a slow hash off the loop and limited per address as a
/// presenter's join is) or, in a private room, its follow key (`followKey=…`). 401 without any,
/// 403 for a wrong one, 404 for a room that is not recorded, 429 after too many wrong keys.
/// A browser (`Accept: text/html`) gets, by the same rules, the viewer's page that plays it
/// (`PlayerPage`), laid out on a worker of its own (`pages`), so that pages never delay the
/// key checks of joins, nor joins the pages.
struct RecordingEndpoint: HTTPEndpoint {
    let hub: LocalRoomHub
    let adminToken: Reloadable<String?>
    let pages: FairWorker
    var path: String { "/rooms/NAME/recording" }

    /// The worker for the pages: each waiting page holds its recording (up to
    /// `limits.recordingBytes`, 8 MiB), so 16 waiting hold at most 128 MiB at the defaults; 4
    /// from one address, so that one browser's reloads cannot take every place.
    static func pageWorker() -> FairWorker { FairWorker(capacity: 16, perAddress: 4) }

    func matches(_ request: HTTPRequest, path: Substring) -> Bool { room(of: request, path: path) != nil }

    private func room(of request: HTTPRequest, path: Substring) -> String? {
        let bytes = path.utf8
        guard bytes.starts(with: "/rooms/".utf8), bytes.reversed().starts(with: "/recording".utf8.reversed()),
              bytes.count > "/rooms//recording".utf8.count, request.value(.upgrade) == nil else { return nil }
        let name = String(path.dropFirst("/rooms/".count).dropLast("/recording".count))
        return RoomEndpoint.isValidRoomName(name) ? name : nil
    }

    func respond(to request: HTTPRequest, from address: String) -> HTTPResponse {
        .error(500, "answered by respond(to:from:on:answer:)")
    }

    func respond(to request: HTTPRequest, from address: String, on loop: EventLoop, answer: @escaping (HTTPResponse) -> Void) {
        guard let name = room(of: request, path: request.path) else { return answer(.error(404, "no recording at \(request.path)")) }
        guard let query = try? Query(request.query) else { return answer(.error(400, "malformed query")) }
        // The admin token only when one is set and given: without one, nobody is the operator.
        let token = adminToken.value
        let admin = token != nil && request.value(.authorization) != nil && AdminToken.refusal(request, token: token) == nil
        hub.recording(ofRoom: name, key: query["key"], followKey: query["followKey"], admin: admin, address: address, on: loop) { access in
            switch access {
            case .recording(let bytes) where request.value(.accept)?.contains("text/html") == true:
                // Reading a recording and laying out its documents takes as long as the
                // recording is large: done off the loops, in turns between addresses.
                let limits = hub.options.messageLimits
                let reply = Unchecked(answer)
                let queued = pages.perform(from: address) {
                    let response: HTTPResponse
                    do {
                        let recording = try Recording.read(bytes, limits: limits)
                        response = ViewerEndpoint.answer(PlayerPage.html(recording, selfContained: false), type: "text/html; charset=utf-8")
                    } catch {
                        response = .error(500, "the room's recording cannot be read: \(error)")
                    }
                    let page = Unchecked(response)
                    loop.execute { reply.value(page.value) }
                }
                if !queued {
                    answer(.error(503, "server busy laying out recordings' pages; try again in a moment", headers: [("Retry-After", "1")]))
                }
            case .recording(let bytes):
                answer(HTTPResponse(status: 200, headers: [
                    ("Content-Type", "application/x-ndjson; charset=utf-8"),
                    ("Content-Disposition", "attachment; filename=\"\(name).rec\""),
                    ("Cache-Control", "no-store"),
                ], body: bytes))
            case .refused(let status, let reason):
                answer(.error(status, reason, headers: status == 401 ? [("WWW-Authenticate", "Bearer")] : []))
            }
        }
    }
}
