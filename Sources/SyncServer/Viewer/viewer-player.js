// The browser viewer as a player of a recording (Protocol/RECORDING.md; the page's JSON is
// made by the server's PlayerPage). Each recorded message goes where a live room's message
// goes (the viewer's `handle`, its document to `showDocument`), so a recording is laid out
// and followed at the reader's own width exactly as a live room. Pure parts are exported for
// node.

/** `m:ss`, or `h:mm:ss` from an hour. */
export function clock(seconds) {
  const s = Math.max(0, Math.floor(Number(seconds) || 0));
  const two = (n) => String(n).padStart(2, '0');
  return s >= 3600 ? `${Math.floor(s / 3600)}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}` : `${Math.floor(s / 60)}:${two(s % 60)}`;
}

/** The index of the first event after time `t` (events in time order, `[seconds, message]`). */
export function nextAfter(events, t) {
  let low = 0, high = events.length;
  while (low < high) { const mid = (low + high) >> 1; if (events[mid][0] <= t) low = mid + 1; else high = mid; }
  return low;
}

/** What a room showed at time `t`: the last document, driver, presence and state messages
 *  at or before it (each null when none), and the index of the next event. */
export function snapshotAt(events, t) {
  const next = nextAfter(events, t);
  const found = { document: null, driver: null, presence: null, state: null, next };
  for (let i = next - 1; i >= 0; i--) {
    const type = events[i][1].type;
    if (type in found && found[type] === null) found[type] = events[i][1];
    if (found.document && found.driver && found.presence && found.state) break;
  }
  return found;
}

const speeds = [0.5, 1, 1.5, 2, 4];
const messageTypes = new Set(['state', 'document', 'driver', 'presence']);

/** Text safe in HTML (text and quoted attributes). */
export function escapeHTML(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A document's text as plain paragraphs, escaped: for a recording opened here, whose documents
 *  no server laid out (no block ids: states place the view by their progress, §3). */
export function plainHTML(text) {
  return String(text).split(/\n[ \t]*\n/).map((part) => part.replace(/^\n+|\n+$/g, ''))
    .filter((part) => part.trim()).map((part) => `<p class="block">${escapeHTML(part)}</p>`).join('\n');
}

/** A recording file's text (Protocol/RECORDING.md) as the player's data; its documents
 *  come from `known` (by fingerprint) or as plain text. Throws an Error naming the line. */
export function parseRecording(text, known = {}) {
  const lines = String(text).split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const line = (n) => { try { return JSON.parse(lines[n]); } catch { throw new Error(`line ${n + 1}: not JSON`); } };
  const header = lines.length ? line(0) : null;
  if (!header || header.format !== 'scrollsync-recording' || header.version !== 1) throw new Error('line 1: not a ScrollSync recording (version 1)');
  const data = { room: String(header.room ?? ''), started: String(header.started ?? ''), duration: 0, documents: {}, sections: [], events: [] };
  const add = (seconds, message, n) => {
    if (!message || typeof message !== 'object' || !messageTypes.has(message.type)) throw new Error(`line ${n}: not a recorded message`);
    if (message.type === 'document') {
      if (typeof message.doc !== 'string' || typeof message.text !== 'string') throw new Error(`line ${n}: a document needs doc and text`);
      data.documents[message.doc] ??= known[message.doc] ?? { title: String(message.name ?? ''), html: plainHTML(message.text) };
    }
    data.events.push([seconds, message]);
    data.duration = seconds;
  };
  if (header.document) add(0, header.document, 1);
  for (let n = 1; n < lines.length; n++) {
    const event = line(n);
    const seconds = Array.isArray(event) && event.length === 2 ? event[0] : NaN;
    if (!(seconds >= data.duration && seconds <= 604800)) throw new Error(`line ${n + 1}: an event is [seconds, message], in time order`);
    add(seconds, event[1], n + 1);
  }
  return data;
}

/** Plays `data` in the viewer (`state`, `handle`, `showDocument`, `jump`, `targetFor`, `render`). */
export function startPlayer(data, viewer) {
  let events = [], documents = {}, total = 0;
  const $ = (id) => document.getElementById('ui_' + id);
  const ui = { play: $('play'), speed: $('speed'), sections: $('sections'), seek: $('seek'), time: $('time'), open: $('open') };
  const player = { playing: false, speed: 1, base: 0, since: 0, next: 0, timer: null };
  const { state } = viewer;
  state.player = player;
  player.position = () => player.playing ? Math.min(total, player.base + (performance.now() - player.since) / 1000 * player.speed) : player.base;
  player.label = () => (player.playing ? '▶ playing' : player.base >= total && total > 0 ? '■ ended' : '⏸ paused')
    + (player.speed === 1 ? '' : ` ×${player.speed}`);

  function apply(message) {
    if (!message || typeof message !== 'object') return;
    if (message.type === 'document') {
      const shown = documents[message.doc];
      if (shown && typeof shown.html === 'string' && message.doc !== state.documentFingerprint) viewer.showDocument(shown.html, message.doc);
    } else if (message.type === 'state' || message.type === 'driver' || message.type === 'presence') {
      viewer.handle(message);
    }
  }

  /** Shows the room as it was at `t` and plays on from there. */
  function seek(t) {
    t = Math.min(total, Math.max(0, Number(t) || 0));
    const at = snapshotAt(events, t);
    // Before the first document (a room recorded from its join), that document already shows.
    apply(at.document ?? events.find((event) => event[1]?.type === 'document')?.[1]);
    apply(at.driver);
    apply(at.presence ?? { type: 'presence' });
    state.last = null;  // an earlier state is the one to show now
    state.following = true;
    if (at.state) { apply(at.state); viewer.jump(viewer.targetFor(at.state)); } else viewer.jump(0);
    player.next = at.next;
    player.base = t;
    player.since = performance.now();
    tick();
  }

  function tick() {
    clearTimeout(player.timer);
    const now = player.position();
    while (player.next < events.length && events[player.next][0] <= now) apply(events[player.next++][1]);
    if (player.playing && now >= total) { player.playing = false; player.base = total; }
    if (player.playing) {
      const due = player.next < events.length ? (events[player.next][0] - now) / player.speed * 1000 : 250;
      player.timer = setTimeout(tick, Math.max(1, Math.min(250, due)));
    }
    show();
  }

  function play(on) {
    if (on && player.base >= total) { seek(0); }
    player.base = player.position();
    player.since = performance.now();
    player.playing = on && total > 0;
    tick();
  }

  function show() {
    const now = player.position();
    ui.play.textContent = player.playing ? '⏸ Pause' : '▶ Play';
    ui.seek.max = String(total);
    if (document.activeElement !== ui.seek) ui.seek.value = String(now);
    ui.time.textContent = `${clock(now)} / ${clock(total)}`;
    viewer.render();
  }

  /** Takes a recording's data (the page's, or a file's) and shows its start. */
  function load(given) {
    events = Array.isArray(given.events) ? given.events : [];
    documents = given.documents && typeof given.documents === 'object' ? given.documents : {};
    total = Math.max(0, Number(given.duration) || 0);
    ui.sections.replaceChildren();
    for (const section of Array.isArray(given.sections) ? given.sections : []) {
      const option = document.createElement('option');
      option.value = String(Number(section.seconds) || 0);
      option.textContent = `${clock(section.seconds)} ${String(section.title ?? '')}`;
      ui.sections.append(option);
    }
    ui.sections.disabled = ui.sections.options.length === 0;
    state.documentFingerprint = null;
    player.playing = false;
    seek(0);
  }

  /** A recording file chosen or dropped here: checked, then played in place of the page's. */
  async function open(file) {
    if (!file) return;
    try {
      if (file.size > 512 * 1024 * 1024) throw new Error('larger than 512 MiB');
      const opened = parseRecording(await file.text(), documents);
      state.notice = null;
      load(opened);
    } catch (error) {
      state.notice = `${file.name}: ${error.message}`;
      viewer.render();
    }
  }
  ui.open.addEventListener('change', () => open(ui.open.files[0]));
  addEventListener('dragover', (event) => event.preventDefault());
  addEventListener('drop', (event) => { event.preventDefault(); open(event.dataTransfer?.files[0]); });
  ui.play.addEventListener('click', () => play(!player.playing));
  ui.speed.addEventListener('change', () => {
    const speed = Number(ui.speed.value);
    if (!speeds.includes(speed)) return;
    player.base = player.position();
    player.since = performance.now();
    player.speed = speed;
    tick();
  });
  ui.sections.addEventListener('change', () => seek(ui.sections.value));
  ui.seek.addEventListener('input', () => seek(ui.seek.value));
  load(data);
  return { seek, play, load, player };
}
