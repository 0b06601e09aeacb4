import Documents

/// The browser viewer's page, script and style, served by the server itself (no build
/// step, no outside network). The script follows PROTOCOL.md §3 to the pixel.
enum ViewerAssets {
    /// A page's start up to its body: the title (escaped) and the viewer's style, and its
    /// script when `script`.
    private static func head(title: String, script: Bool) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        <title>\(DocumentHTML.escape(title)) · ScrollSync</title>
        <link rel="stylesheet" href="/viewer.css">\(script ? "\n<script type=\"module\" src=\"/viewer.js\"></script>" : "")
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
    /// follows it from a terminal (`terminal`, escaped) in its status bar.
    static func page(room: String, terminal: String? = nil) -> String {
        let name = DocumentHTML.escape(room)
        let hint = terminal.map { "\n<details id=\"ui_terminal\"><summary>Follow from a terminal</summary><code>\(DocumentHTML.escape($0))</code></details>" } ?? ""
        return head(title: room, script: true) + """
        <body data-room="\(name)">
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
        <button id="ui_presentopen" type="button">Present</button>
        <form id="ui_present" hidden><label>Your name <input id="ui_name" autocomplete="nickname" maxlength="64"></label> <label>Presenter key <input id="ui_key" type="password" autocomplete="off" required></label> <label>Follow key (makes it private) <input id="ui_newfollowkey" type="password" autocomplete="off"></label> <button type="submit">Present</button></form>
        <form id="ui_private" hidden><span id="ui_privatewhy"></span> <label>Follow key <input id="ui_followkey" type="password" autocomplete="off" required></label> <button type="submit">Follow</button></form>\(hint)
        </footer>
        </body>
        </html>

        """
    }

    /// The page's style, script and the script's §3 mapping (files beside this one,
    /// embedded at build time).
    static let style = String(decoding: PackageResources.viewer_css, as: UTF8.self)
    static let script = String(decoding: PackageResources.viewer_js, as: UTF8.self)
    static let followScript = String(decoding: PackageResources.viewer_follow_js, as: UTF8.self)
}
