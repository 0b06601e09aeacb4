// ScrollSync's browser viewer: follows (or drives) a room by the protocol's anchor model
// (PROTOCOL.md §3, in viewer-follow.js; a block's height includes the gap to the next
// block). The document's HTML comes from the server, made from the same blocks the
// terminal uses; nothing from the network is inserted as HTML except that (which the
// server escapes).
import { anchorAt, topFor } from './viewer-follow.js';
import { startPlayer } from './viewer-player.js';

const room = document.body.dataset.room;
// The page's own elements have ids with "_", which no block id has (PROTOCOL.md §7).
const main = document.getElementById('ui_document');
const $ = (id) => document.getElementById('ui_' + id);
/** The element of block `id`, inside the document only. */
const blockElement = (id) => main.querySelector(`[id="${CSS.escape(id)}"]`);
const ui = { role: $('role'), link: $('link'), place: $('place'), driver: $('driver'), followers: $('followers'),
             follow: $('follow'), present: $('present'), key: $('key'), section: $('section'), titlebar: $('titlebar'),
             privateForm: $('private'), privateWhy: $('privatewhy'), followKey: $('followkey'), newFollowKey: $('newfollowkey'),
             name: $('name'), presentOpen: $('presentopen'), title: $('title') };
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

/** A block's place in this view, below the sticky header: where `topFor` wants it. */
const geometry = (el) => ({ id: el.id, top: topOf(el) - headerHeight(), height: heightOf(el) });

/** The block at the top of this view (under the sticky header) and how far into it, looking
 *  `slack` pixels lower (a view placed by rounding may sit a fraction of a pixel above it). */
function anchorHere(slack = 0) { return anchorAt(window.scrollY + slack, blocks().map(geometry)); }

/** Where this view's top goes for a state (PROTOCOL.md §3). */
function targetFor(s) {
  return Math.round(topFor(s, (id) => { const el = blockElement(id); return el ? geometry(el) : null; }, maxScroll()));
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
  if (state.player) return;  // a recording brings its documents (viewer-player.js)
  try {
    const answer = await fetch(`/rooms/${encodeURIComponent(room)}/document${followQuery('?')}`, { cache: 'no-store' });
    if (!answer.ok) return;
    const fingerprint = answer.headers.get('X-Document-Fingerprint');
    if (fingerprint && fingerprint === state.documentFingerprint) return;
    showDocument(await answer.text(), fingerprint);
  } catch (error) {
    ui.link.textContent = `○ the document could not be loaded: ${error}`;
  }
}
/** Shows a document's HTML, made by the server from the block model (every character escaped). */
function showDocument(html, fingerprint) {
  const keep = state.role === 'presenter' || !state.following ? anchorHere() : null;
  main.innerHTML = html;
  state.documentFingerprint = fingerprint;
  showTitle();
  jump(state.role === 'follower' && state.following && state.last ? targetFor(state.last) : keep ? anchorTarget(keep) : null);
  render();
}

/** The page's title is the document's (its first top-level heading), as text: never HTML. */
function showTitle() {
  const heading = main.querySelector('h1.block');
  const title = heading ? heading.textContent.trim() : '';
  ui.title.textContent = title || room;
  document.title = `${title || room} · ScrollSync`;
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
// A follower asks first whether it may follow (the document answers 403/429 for a wrong follow
// key: a refused WebSocket upgrade does not tell a page why). A 401 comes from a private room
// and from a room nobody has opened yet alike (the server does not reveal private rooms), so
// the page then tries to join, and asks for the key only if the join is refused.
async function mayFollow() {
  state.maybePrivate = false;
  try {
    const answer = await fetch(`/rooms/${encodeURIComponent(room)}/document${followQuery('?')}`, { method: 'HEAD', cache: 'no-store' });
    if (answer.status === 403 || answer.status === 429) {
      askFollowKey(answer.status === 403 ? 'Wrong follow key.' : 'Too many wrong keys; wait a minute.');
      return false;
    }
    state.maybePrivate = answer.status === 401;
  } catch { /* the connection says why */ }
  ui.privateForm.hidden = true;
  return true;
}
function askFollowKey(why) {
  ui.privateWhy.textContent = why;
  ui.privateForm.hidden = false;
  ui.followKey.focus();
  state.stopped = 'private room: give its follow key';
  render();
}
async function connect() {
  if (state.role === 'follower' && !(await mayFollow())) return;
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const name = state.role === 'presenter' && ui.name.value ? `&name=${encodeURIComponent(ui.name.value)}` : '';
  const query = state.role === 'presenter' ? `?role=presenter&key=${encodeURIComponent(state.key)}${name}${followQuery('&')}` : followQuery('?');
  const socket = new WebSocket(`${scheme}//${location.host}/rooms/${encodeURIComponent(room)}${query}`, 'scrollsync.v1');
  let opened = false;
  socket.onopen = () => { opened = true; };
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
    if (!opened && state.role === 'follower' && state.maybePrivate) {  // the upgrade was refused: a private room
      askFollowKey(state.followKey ? 'Wrong follow key.' : 'This room is private.');
      return;
    }
    if (event.code === 1008 && state.role === 'presenter') {
      // The key was refused: follow again, and offer the form again to retry.
      state.role = 'follower';
      state.key = null;
      state.notice = `refused: ${event.reason || 'wrong or missing presenter key'}`;
      ui.present.hidden = false;
      ui.presentOpen.hidden = true;
      ui.key.value = '';
      ui.key.focus();
      render();
      connect();
      return;
    }
    if (event.code === 1008) {  // refused for good: retrying cannot help
      state.stopped = event.reason || 'refused';
      render();
      // The room became private (it is there: a 401 means private): ask for its key.
      mayFollow().then((may) => { if (may && state.maybePrivate) askFollowKey('This room is private.'); });
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
  // Until the room has answered there is nothing true to say of it: no role, place, driver
  // or count that would look real (only the link: connecting…, offline, refused).
  const known = s.online || !!s.player;
  ui.role.textContent = !known ? '' : s.role === 'presenter' ? (s.driver && s.driver === s.you ? 'PRESENTING' : 'PRESENTER (t: take control)')
    : s.following ? 'FOLLOWING' : 'DETACHED';
  ui.follow.hidden = s.role !== 'follower' || s.following;
  ui.link.textContent = s.player ? s.player.label() : s.stopped ? `✕ ${s.stopped}` : s.online ? '● live'
    : s.retryAt ? `○ offline, retrying in ${Math.max(0, (s.retryAt - performance.now()) / 1000).toFixed(1)} s` : 'connecting…';
  const max = maxScroll();
  const arrow = s.direction === 'up' ? '↑' : s.direction === 'down' ? '↓' : '·';
  ui.place.textContent = (s.notice ? `${s.notice}` : '') + (!known ? '' : (s.notice ? ' · ' : '')
    + (max > 0 ? `${arrow} ${Math.round(window.scrollY / max * 100)} %` : `${arrow} all`));
  ui.driver.textContent = !known ? '' : s.driver ? `driver ${s.driver === s.you ? 'you' : (s.driverName ?? s.driver.slice(0, 6))}` : 'nobody driving';
  const followers = s.presence?.followers ?? 0;
  ui.followers.textContent = !known ? '' : `${followers} follower${followers === 1 ? '' : 's'}` + (s.presence?.detached ? ` (${s.presence.detached} detached)` : '');
  ui.titlebar.classList.toggle('collapsed', window.scrollY > 80);
  const here = anchorHere(1);
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

// A follow key makes the room private: the server takes it only from a presenter who gives
// the room's presenter key (or holds a presenter token), so the form says so before it asks.
const followKeyNeedsKey = 'A follow key makes the room private: give the room\'s presenter key with it.';
function checkPresentForm() {
  ui.key.setCustomValidity(ui.newFollowKey.value && !ui.key.value && !state.token ? followKeyNeedsKey : '');
}
ui.key.addEventListener('input', checkPresentForm);
ui.newFollowKey.addEventListener('input', checkPresentForm);

// Presenting: the key from the form (never put in this page's URL), or from the URL when
// the user put it there (?present&key=…).
function present(key) {
  if (ui.newFollowKey.value && !key && !state.token) {
    state.notice = `refused: ${followKeyNeedsKey}`;
    render();
    return;
  }
  state.role = 'presenter';
  state.key = key;
  if (ui.newFollowKey.value) state.followKey = ui.newFollowKey.value;
  ui.present.hidden = true;
  ui.presentOpen.hidden = true;
  if (state.socket) { const old = state.socket; state.socket = null; old.close(); }
  connect();
}
// The presenter's form waits behind its button: most of a room only follows.
ui.presentOpen.addEventListener('click', () => {
  ui.presentOpen.hidden = true;
  ui.present.hidden = false;
  (ui.name.value ? ui.key : ui.name).focus();
});
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
const recording = document.getElementById('ui_recording');
if (document.body.dataset.player !== undefined && recording) {
  ui.present.hidden = ui.presentOpen.hidden = true;  // a recording is played, not presented
  let data = {};
  try { data = JSON.parse(recording.textContent); } catch { state.notice = 'the recording could not be read'; }
  startPlayer(data, { state, handle, showDocument, jump, targetFor, render });
} else if (query.has('present') && givenKey) present(givenKey); else connect();
window.scrollsync = { state, anchorHere, targetFor, blocks };  // for tests and the curious
