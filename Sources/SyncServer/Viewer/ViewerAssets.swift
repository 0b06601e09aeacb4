import COpenSSL
import Documents

/// The browser viewer's page, script and style, served by the server itself (no build
/// step, no outside network). The script follows PROTOCOL.md §3 to the pixel.
enum ViewerAssets {
    /// A page's start up to its body: the title (escaped) and the viewer's style, and its
    /// script when `script`; inline when `selfContained` (a page that loads nothing).
    private static func head(title: String, script: Bool, selfContained: Bool = false) -> String {
        let assets = selfContained
            ? "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-\(inlineScriptHash)'; style-src 'sha256-\(styleHash)'; base-uri 'none'; form-action 'none'\">\n"
                + "<title>\(DocumentHTML.escape(title)) · ScrollSync</title>\n<style>\(style)</style>\n<script type=\"module\">\(inlineScript)</script>"
            : "<title>\(DocumentHTML.escape(title)) · ScrollSync</title>\n<link rel=\"stylesheet\" href=\"/viewer.css\">"
                + (script ? "\n<script type=\"module\" src=\"/viewer.js\"></script>" : "")
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        \(assets)
        </head>

        """
    }

    /// A short page that says what went wrong (every character of it escaped).
    static func problem(title: String, detail: String) -> String {
        head(title: title, script: false) + """
        <body>
        <main id="ui_document"><h1>\(DocumentHTML.escape(title))</h1><p>\(DocumentHTML.escape(detail))</p></main>
        </body>
        </html>

        """
    }

    /// The page for `room` (a valid room name; escaped all the same), with the command that
    /// follows it from a terminal (`terminal`, escaped) in its status bar; with `player` (the
    /// player's JSON, safe in a script element) the page plays a recording of it instead.
    static func page(room: String, terminal: String? = nil, player: String? = nil, selfContained: Bool = false) -> String {
        let name = DocumentHTML.escape(room)
        let hint = terminal.map { "\n<details id=\"ui_terminal\"><summary>Follow from a terminal</summary><code>\(DocumentHTML.escape($0))</code></details>" } ?? ""
        return head(title: player == nil ? room : "\(room) (recording)", script: true, selfContained: selfContained) + """
        <body data-room="\(name)"\(player == nil ? "" : " data-player=\"\"")>
        <header id="ui_titlebar">
        <h1 id="ui_title">\(name)</h1>
        <div id="ui_section" aria-live="polite"></div>
        </header>
        <main id="ui_document" tabindex="-1" aria-label="The room's document"><p class="waiting">Waiting for the room's document…</p></main>
        <footer id="ui_status" role="status">
        <span id="ui_role"></span>
        <span id="ui_link">connecting…</span>
        <span id="ui_place"></span>
        <span id="ui_driver"></span>
        <span id="ui_followers"></span>
        <button id="ui_follow" type="button" hidden>Follow again (f)</button>
        <button id="ui_presentopen" type="button"\(player == nil ? "" : " hidden")>Present</button>
        <form id="ui_present" hidden><label>Your name <input id="ui_name" autocomplete="nickname" maxlength="64"></label> <label>Presenter key <input id="ui_key" type="password" autocomplete="off" required></label> <label>Follow key (makes it private) <input id="ui_newfollowkey" type="password" autocomplete="off"></label> <button type="submit">Present</button></form>
        <form id="ui_private" hidden><span id="ui_privatewhy"></span> <label>Follow key <input id="ui_followkey" type="password" autocomplete="off" required></label> <button type="submit">Follow</button></form>\(hint)
        \(player == nil ? "" : playerControls)</footer>\(player.map { "\n<script type=\"application/json\" id=\"ui_recording\">\($0)</script>" } ?? "")
        </body>
        </html>

        """
    }

    /// The player's controls, in the status bar (the recording follows the bar, PlayerPage).
    private static let playerControls = """
        <nav id="ui_player" aria-label="Playback">
        <button id="ui_play" type="button">▶ Play</button>
        <label>Speed <select id="ui_speed"><option value="0.5">0.5×</option><option value="1" selected>1×</option><option value="1.5">1.5×</option><option value="2">2×</option><option value="4">4×</option></select></label>
        <label>Section <select id="ui_sections"></select></label>
        <input id="ui_seek" type="range" min="0" max="0" step="0.1" value="0" aria-label="Time">
        <span id="ui_time">0:00 / 0:00</span>
        <label>Open a recording <input id="ui_open" type="file" accept=".rec,.jsonl,.ndjson,application/x-ndjson"></label>
        </nav>

        """

    /// The page's style, script and the script's §3 mapping (files beside this one,
    /// embedded at build time).
    static let style = String(decoding: PackageResources.viewer_css, as: UTF8.self)
    static let script = String(decoding: PackageResources.viewer_js, as: UTF8.self)
    static let followScript = String(decoding: PackageResources.viewer_follow_js, as: UTF8.self)
    static let playerScript = String(decoding: PackageResources.viewer_player_js, as: UTF8.self)

    /// The viewer's modules as one inline module (for a page that loads nothing): the mapping,
    /// the player, then the viewer, each without its `import` lines and `export` words (the
    /// modules import each other only by a whole line, `import { … } from './….js';`).
    static let inlineScript = [followScript, playerScript, script].map { module in
        module.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("import ") }
            .map { $0.hasPrefix("export ") ? $0.dropFirst("export ".count) : $0 }
            .joined(separator: "\n")
    }.joined(separator: "\n")

    /// The inline script's and style's SHA-256 in base64, the self-contained page's
    /// Content-Security-Policy: only they run, and nothing is fetched.
    static let inlineScriptHash = sha256Base64(inlineScript)
    static let styleHash = sha256Base64(style)

    private static func sha256Base64(_ text: String) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        let bytes = Array(text.utf8)
        bytes.withUnsafeBufferPointer { _ = SHA256($0.baseAddress, $0.count, &digest) }
        var encoded = [UInt8](repeating: 0, count: 48)
        let length = EVP_EncodeBlock(&encoded, digest, 32)
        return String(decoding: encoded.prefix(Int(length)), as: UTF8.self)
    }
}
