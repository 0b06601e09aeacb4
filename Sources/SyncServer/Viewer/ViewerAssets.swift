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

    /// The page for `room` (a valid room name; escaped all the same).
    static func page(room: String) -> String {
        let name = DocumentHTML.escape(room)
        return head(title: room, script: true) + """
        <body data-room="\(name)">
        <header id="ui_titlebar">
        <h1 id="ui_title">\(name)</h1>
        <div id="ui_section" aria-live="polite"></div>
        </header>
        <main id="ui_document" tabindex="-1" aria-label="The room's document"><p class="waiting">Waiting for the room's document…</p></main>
        <footer id="ui_status" role="status">
        <span id="ui_role">FOLLOWING</span>
        <span id="ui_link">connecting…</span>
        <span id="ui_place"></span>
        <span id="ui_driver"></span>
        <span id="ui_followers"></span>
        <button id="ui_follow" type="button" hidden>Follow again (f)</button>
        <form id="ui_present"><label>Your name <input id="ui_name" autocomplete="nickname" maxlength="64"></label> <label>Presenter key <input id="ui_key" type="password" autocomplete="off" required></label> <label>Follow key (makes it private) <input id="ui_newfollowkey" type="password" autocomplete="off"></label> <button type="submit">Present</button></form>
        <form id="ui_private" hidden><span id="ui_privatewhy"></span> <label>Follow key <input id="ui_followkey" type="password" autocomplete="off" required></label> <button type="submit">Follow</button></form>
        </footer>
        </body>
        </html>

        """
    }

    static let style = #"""
    :root { color-scheme: light dark; --bar: #f3f3f3; --text: #1d1d1f; --dim: #6e6e73; --accent: #0a64d8; }
    @media (prefers-color-scheme: dark) { :root { --bar: #1f1f22; --text: #ececf0; --dim: #9a9aa2; --accent: #5aa2ff; } }
    * { box-sizing: border-box; }
    html { scroll-behavior: auto; }
    body { margin: 0; font: clamp(15px, 0.6vw + 12px, 22px)/1.55 system-ui, sans-serif; color: var(--text); }
    #ui_titlebar { position: sticky; top: 0; z-index: 2; background: var(--bar); padding: 0.6em 1em 0.4em; border-bottom: 1px solid color-mix(in srgb, var(--dim) 40%, transparent); }
    #ui_title { margin: 0; font-size: 1.5em; transition: font-size 0.15s; overflow-wrap: anywhere; }
    #ui_titlebar.collapsed #ui_title { font-size: 1em; }
    #ui_section { color: var(--dim); font-size: 0.9em; min-height: 1.3em; overflow-wrap: anywhere; }
    main { max-width: 72ch; margin: 0 auto; padding: 1em 1em 6em; overflow-wrap: anywhere; }
    main:focus { outline: none; }
    .block { margin: 0 0 0.9em; }
    h1.block, h2.block, h3.block, h4.block, h5.block, h6.block { line-height: 1.25; margin-top: 1.2em; }
    .item { padding-left: 1.4em; text-indent: -1.4em; }
    .depth-1 { padding-left: 2.9em; } .depth-2 { padding-left: 4.4em; } .depth-3 { padding-left: 5.9em; }
    .depth-4 { padding-left: 7.4em; } .depth-5 { padding-left: 8.9em; }
    .block[data-tight] { margin-bottom: 0.2em; }
    .block[data-rule-after] { padding-bottom: 0.9em; border-bottom: 1px solid var(--dim); }
    th.align-left, td.align-left { text-align: left; } th.align-center, td.align-center { text-align: center; }
    th.align-right, td.align-right { text-align: right; }
    .marker { display: inline-block; min-width: 1.2em; text-indent: 0; color: var(--dim); }
    blockquote { border-left: 3px solid var(--dim); padding-left: 1em; color: var(--dim); font-style: italic; }
    pre { overflow-x: auto; padding: 0.8em; background: var(--bar); border-radius: 6px; }
    code { font: 0.9em ui-monospace, monospace; }
    table { border-collapse: collapse; display: block; overflow-x: auto; }
    th, td { border: 1px solid color-mix(in srgb, var(--dim) 50%, transparent); padding: 0.2em 0.6em; text-align: left; }
    small { color: var(--dim); }
    #ui_status { position: fixed; bottom: 0; left: 0; right: 0; z-index: 2; display: flex; flex-wrap: wrap; gap: 0.4em 1em; align-items: center;
              padding: 0.4em 1em; background: var(--bar); font-size: 0.85em; border-top: 1px solid color-mix(in srgb, var(--dim) 40%, transparent); }
    #ui_role { font-weight: 600; }
    button, input { font: inherit; }
    button { color: var(--accent); background: none; border: 1px solid var(--accent); border-radius: 4px; padding: 0.1em 0.6em; cursor: pointer; }
    :focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
    .waiting { color: var(--dim); }
    """#

    static let script = #"""
    // ScrollSync's browser viewer: follows (or drives) a room by the protocol's anchor model
    // (PROTOCOL.md §3): atTop → the top, atBottom → the bottom, else the anchor's block top
    // plus fraction × its height (the gap to the next block included), else progress × the
    // scrollable extent, else the offset. The document's HTML comes from the server, made
    // from the same blocks the terminal uses; nothing from the network is inserted as HTML
    // except that (which the server escapes).
    const room = document.body.dataset.room;
    // The page's own elements have ids with "_", which no block id has (PROTOCOL.md §7).
    const main = document.getElementById('ui_document');
    const $ = (id) => document.getElementById('ui_' + id);
    /** The element of block `id`, inside the document only. */
    const blockElement = (id) => main.querySelector(`[id="${CSS.escape(id)}"]`);
    const ui = { role: $('role'), link: $('link'), place: $('place'), driver: $('driver'), followers: $('followers'),
                 follow: $('follow'), present: $('present'), key: $('key'), section: $('section'), titlebar: $('titlebar'),
                 privateForm: $('private'), privateWhy: $('privatewhy'), followKey: $('followkey'), newFollowKey: $('newfollowkey'),
                 name: $('name') };
    const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)');

    const state = {
      role: 'follower', key: null, followKey: null, token: null, socket: null, you: null, driver: null, driverName: null, presence: null,
      following: true, last: null, documentFingerprint: null, target: null, animating: false,
      backoff: 250, online: false, stopped: null, lastSent: 0, sendTimer: null, viewAnchor: null, direction: 'none', notice: null,
    };

    // --- Geometry ---------------------------------------------------------------------------
    const blocks = () => Array.from(main.querySelectorAll('.block'));
    const headerHeight = () => ui.titlebar.getBoundingClientRect().height;
    const topOf = (el) => el.getBoundingClientRect().top + window.scrollY;
    const heightOf = (el) => {
      const next = el.nextElementSibling;
      return Math.max(1, next ? topOf(next) - topOf(el) : el.getBoundingClientRect().height);
    };
    const maxScroll = () => Math.max(0, document.documentElement.scrollHeight - window.innerHeight);

    /** The block at the top of this view (under the sticky header) and how far into it. */
    function anchorHere() {
      const top = window.scrollY + headerHeight();
      for (const el of blocks()) {
        const t = topOf(el), h = heightOf(el);
        if (t + h > top) return { id: el.id, fraction: Math.min(1, Math.max(0, (top - t) / h)) };
      }
      return null;
    }

    /** Where this view's top goes for a state (PROTOCOL.md §3). */
    function targetFor(s) {
      const max = maxScroll();
      if (max <= 0 || s.atTop) return 0;
      if (s.atBottom) return max;
      let y = null;
      if (s.anchor && typeof s.anchor.id === 'string') {
        const el = blockElement(s.anchor.id);
        if (el) {
          const f = Math.min(1, Math.max(0, Number(s.anchor.fraction) || 0));
          y = topOf(el) + f * heightOf(el) - headerHeight();
        }
      }
      if (y === null && typeof s.progress === 'number') y = s.progress * max;
      if (y === null) y = Number(s.offset) || 0;
      return Math.min(max, Math.max(0, Math.round(y)));
    }

    function anchorTarget(a) { return a ? targetFor({ anchor: a }) : window.scrollY; }

    // --- Following ---------------------------------------------------------------------------
    /** Glides toward the target by a share of what is left each frame: never past it. */
    function moveTo(y) {
      state.target = y;
      // No glide when motion is to be reduced, or for a tab nobody sees (its frames do not run).
      if (reducedMotion.matches || document.hidden) { window.scrollTo(0, y); state.target = null; return; }
      if (!state.animating) { state.animating = true; requestAnimationFrame(step); }
    }
    function step() {
      if (state.target === null || (state.role === 'follower' && !state.following)) { state.animating = false; return; }
      const now = window.scrollY, left = state.target - now;
      if (Math.abs(left) <= 2) { window.scrollTo(0, state.target); state.target = null; state.animating = false; return; }
      window.scrollTo(0, now + left * 0.35);
      if (window.scrollY === now) { window.scrollTo(0, state.target); state.target = null; state.animating = false; return; }
      requestAnimationFrame(step);
    }
    /** Straight to `y` (the layout changed under the view): a glide toward an old target stops. */
    function jump(y) {
      if (y === null) return;
      state.target = null;
      window.scrollTo(0, y);
    }
    function follow(s) {
      if (state.last && typeof s.seq === 'number' && typeof state.last.seq === 'number' && s.seq <= state.last.seq) return;
      state.last = s;
      state.direction = s.direction || 'none';
      if (s.doc && s.doc !== state.documentFingerprint) loadDocument();
      if (state.role === 'follower' && state.following) moveTo(targetFor(s));
      render();
    }
    function detach() {
      if (state.role !== 'follower' || !state.following) return;
      state.following = false;
      state.target = null;
      send({ type: 'follow', following: false });
      render();
    }
    function resume() {
      if (state.role !== 'follower' || state.following) return;
      state.following = true;
      send({ type: 'follow', following: true });
      if (state.last) moveTo(targetFor(state.last));
      render();
    }

    // --- Presenting --------------------------------------------------------------------------
    /** This view's place, to the room, at most 60 times a second. */
    function report() {
      if (state.role !== 'presenter' || !state.online || state.driver !== state.you) return;  // only the driver moves the room
      const wait = state.lastSent + 1000 / 60 - performance.now();
      if (wait > 0) { if (!state.sendTimer) state.sendTimer = setTimeout(() => { state.sendTimer = null; report(); }, wait); return; }
      state.lastSent = performance.now();
      const anchor = anchorHere();
      const message = { type: 'scroll', offset: Math.round(window.scrollY), viewport: window.innerHeight,
                        content: document.documentElement.scrollHeight, t: Date.now() };
      if (anchor) message.anchor = anchor;
      send(message);
    }

    // --- The document ------------------------------------------------------------------------
    async function loadDocument() {
      try {
        const answer = await fetch(`/rooms/${encodeURIComponent(room)}/document${followQuery('?')}`, { cache: 'no-store' });
        if (!answer.ok) return;
        const fingerprint = answer.headers.get('X-Document-Fingerprint');
        if (fingerprint && fingerprint === state.documentFingerprint) return;
        const html = await answer.text();
        const keep = state.role === 'presenter' || !state.following ? anchorHere() : null;
        main.innerHTML = html;  // made by the server from the block model, every character escaped
        state.documentFingerprint = fingerprint;
        jump(state.role === 'follower' && state.following && state.last ? targetFor(state.last) : keep ? anchorTarget(keep) : null);
        render();
      } catch (error) {
        ui.link.textContent = `○ the document could not be loaded: ${error}`;
      }
    }

    // --- The connection ----------------------------------------------------------------------
    function send(message) {
      if (state.socket && state.socket.readyState === WebSocket.OPEN) state.socket.send(JSON.stringify(message));
    }
    // A private room's follow key goes with the follower's connection and document requests;
    // a presenter's makes the room private.
    function followQuery(separator) {
      const parts = [];
      if (state.followKey) parts.push(`followKey=${encodeURIComponent(state.followKey)}`);
      if (state.token) parts.push(`token=${encodeURIComponent(state.token)}`);  // an application's signed token
      return parts.length ? separator + parts.join('&') : '';
    }
    // A follower asks first whether it may follow (the document answers 401/403 for a private
    // room without its key: a refused WebSocket upgrade does not tell a page why).
    async function mayFollow() {
      try {
        const answer = await fetch(`/rooms/${encodeURIComponent(room)}/document${followQuery('?')}`, { method: 'HEAD', cache: 'no-store' });
        if (answer.status === 401 || answer.status === 403 || answer.status === 429) {
          ui.privateWhy.textContent = answer.status === 401 ? 'This room is private.' : answer.status === 403 ? 'Wrong follow key.' : 'Too many wrong keys; wait a minute.';
          ui.privateForm.hidden = false;
          ui.followKey.focus();
          state.stopped = 'private room: give its follow key';
          render();
          return false;
        }
      } catch { /* the connection says why */ }
      ui.privateForm.hidden = true;
      return true;
    }
    async function connect() {
      if (state.role === 'follower' && !(await mayFollow())) return;
      const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      const name = state.role === 'presenter' && ui.name.value ? `&name=${encodeURIComponent(ui.name.value)}` : '';
      const query = state.role === 'presenter' ? `?role=presenter&key=${encodeURIComponent(state.key)}${name}${followQuery('&')}` : followQuery('?');
      const socket = new WebSocket(`${scheme}//${location.host}/rooms/${encodeURIComponent(room)}${query}`, 'scrollsync.v1');
      state.socket = socket;
      state.stopped = null;
      ui.link.textContent = 'connecting…';
      socket.onmessage = (event) => {
        let message;
        try { message = JSON.parse(event.data); } catch { return; }
        handle(message);
      };
      socket.onclose = (event) => {
        if (state.socket !== socket) return;
        state.online = false;
        if (event.code === 1008 && state.role === 'presenter') {
          // The key was refused: follow again, and offer the form again to retry.
          state.role = 'follower';
          state.key = null;
          state.notice = `refused: ${event.reason || 'wrong or missing presenter key'}`;
          ui.present.hidden = false;
          ui.key.value = '';
          ui.key.focus();
          render();
          connect();
          return;
        }
        if (event.code === 1008) {  // refused for good: retrying cannot help
          state.stopped = event.reason || 'refused';
          render();
          mayFollow();  // the room became private: ask for its key
          return;
        }
        const delay = state.backoff * (0.75 + Math.random() * 0.5);
        state.backoff = Math.min(8000, state.backoff * 2);
        state.retryAt = performance.now() + delay;
        render();
        setTimeout(connect, delay);
      };
    }
    function handle(m) {
      switch (m.type) {
        case 'welcome':
          state.online = true;
          state.stopped = null;
          if (state.role === 'presenter') state.notice = null;  // an earlier refusal is over
          state.backoff = 250;
          state.you = m.you;
          state.driver = m.driver ?? null;
          state.driverName = m.driverName ?? null;
          state.presence = m.presence ?? null;
          state.last = null;
          if (m.doc && m.doc !== state.documentFingerprint) loadDocument();
          if (m.state) follow(m.state);
          if (state.role === 'presenter') report();
          break;
        case 'state': follow(m); break;
        case 'driver':
          state.driver = m.driver ?? null;
          state.driverName = m.name ?? null;
          if (state.role === 'presenter') report();  // taking control sends this view's place at once
          break;
        case 'presence': state.presence = m; break;
        case 'document': if (m.doc !== state.documentFingerprint) loadDocument(); break;
        case 'error': state.notice = `refused: ${m.message ?? m.code}`; setTimeout(() => { state.notice = null; render(); }, 5000); break;
      }
      render();
    }

    // --- What the user sees --------------------------------------------------------------------
    function render() {
      const s = state;
      ui.role.textContent = s.role === 'presenter' ? (s.driver && s.driver === s.you ? 'PRESENTING' : 'PRESENTER (t: take control)')
        : s.following ? 'FOLLOWING' : 'DETACHED';
      ui.follow.hidden = s.role !== 'follower' || s.following;
      ui.link.textContent = s.stopped ? `✕ ${s.stopped}` : s.online ? '● live'
        : s.retryAt ? `○ offline, retrying in ${Math.max(0, (s.retryAt - performance.now()) / 1000).toFixed(1)} s` : 'connecting…';
      const max = maxScroll();
      const arrow = s.direction === 'up' ? '↑' : s.direction === 'down' ? '↓' : '·';
      ui.place.textContent = (s.notice ? `${s.notice} · ` : '') + (max > 0 ? `${arrow} ${Math.round(window.scrollY / max * 100)} %` : `${arrow} all`);
      ui.driver.textContent = s.driver ? `driver ${s.driver === s.you ? 'you' : (s.driverName ?? s.driver.slice(0, 6))}` : 'nobody driving';
      const followers = s.presence?.followers ?? 0;
      ui.followers.textContent = `${followers} follower${followers === 1 ? '' : 's'}` + (s.presence?.detached ? ` (${s.presence.detached} detached)` : '');
      ui.titlebar.classList.toggle('collapsed', window.scrollY > 80);
      const here = anchorHere();
      const block = here && blockElement(here.id);
      const heading = block && (block.dataset.section ? blockElement(block.dataset.section) : null);
      ui.section.textContent = heading ? heading.textContent : '';
    }

    // Scrolling yourself (wheel, touch, keys, the scrollbar) detaches a follower; f follows again.
    for (const type of ['wheel', 'touchmove']) addEventListener(type, detach, { passive: true });
    addEventListener('mousedown', (event) => { if (event.clientX >= document.documentElement.clientWidth) detach(); });
    addEventListener('keydown', (event) => {
      if (event.target instanceof HTMLInputElement) return;
      if (['ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End', ' '].includes(event.key)) detach();
      else if (event.key === 'f') resume();
      else if (event.key === 't' && state.role === 'presenter') send({ type: 'control', action: 'take' });
    });
    ui.follow.addEventListener('click', resume);
    addEventListener('scroll', () => { if (state.role === 'presenter') report(); else if (!state.following) state.viewAnchor = anchorHere(); render(); }, { passive: true });
    // A resize or a font-size change keeps the anchor: the presenter's (following) or this view's own.
    const resized = new ResizeObserver(() => {
      if (state.role === 'follower' && state.following && state.last) jump(targetFor(state.last));
      else if (state.viewAnchor) jump(anchorTarget(state.viewAnchor));
      if (state.role === 'presenter') report();
      render();
    });
    resized.observe(main);
    resized.observe(ui.titlebar);
    setInterval(render, 500);  // the retry countdown counts
    document.addEventListener('visibilitychange', () => {
      if (document.hidden && state.target !== null) { window.scrollTo(0, state.target); state.target = null; state.animating = false; }
    });

    // Presenting: the key from the form (never put in this page's URL), or from the URL when
    // the user put it there (?present&key=…).
    function present(key) {
      state.role = 'presenter';
      state.key = key;
      if (ui.newFollowKey.value) state.followKey = ui.newFollowKey.value;
      ui.present.hidden = true;
      if (state.socket) { const old = state.socket; state.socket = null; old.close(); }
      connect();
    }
    ui.present.addEventListener('submit', (event) => { event.preventDefault(); if (ui.key.value) present(ui.key.value); });
    ui.privateForm.addEventListener('submit', (event) => {
      event.preventDefault();
      state.followKey = ui.followKey.value;
      state.stopped = null;
      connect();
    });
    const query = new URLSearchParams(location.search);
    const givenKey = query.get('key');
    if (query.get('followKey')) state.followKey = query.get('followKey');
    if (query.get('token')) state.token = query.get('token');
    // A key in the address bar would stay on screen, in history and in bookmarks: it is
    // taken out of the URL as soon as it is read.
    if (query.has('key') || query.has('followKey') || query.has('token')) {
      query.delete('key');
      query.delete('followKey');
      query.delete('token');
      const rest = query.toString();
      history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
    }
    if (query.has('present') && givenKey) present(givenKey); else connect();
    window.scrollsync = { state, anchorHere, targetFor, blocks };  // for tests and the curious
    """#
}
