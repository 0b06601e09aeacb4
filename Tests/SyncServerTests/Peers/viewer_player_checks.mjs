// The player's pure parts (viewer-player.js) under node: node viewer_player_checks.mjs MODULE
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';

const { clock, nextAfter, snapshotAt, parseRecording, plainHTML } = await import(pathToFileURL(process.argv[2]).href);
assert.equal(clock(0), '0:00');
assert.equal(clock(59.9), '0:59');
assert.equal(clock(61), '1:01');
assert.equal(clock(3725), '1:02:05');
assert.equal(clock(-3), '0:00');
assert.equal(clock('x'), '0:00');

const events = [
  [0, { type: 'document', doc: 'a' }], [0, { type: 'driver', driver: 'd1' }], [1, { type: 'state', seq: 1 }],
  [2, { type: 'state', seq: 2 }], [2, { type: 'presence', followers: 2 }], [3, { type: 'document', doc: 'b' }], [4, { type: 'state', seq: 3 }],
];
assert.equal(nextAfter(events, -1), 0);
assert.equal(nextAfter(events, 0), 2, 'events at the time itself have happened');
assert.equal(nextAfter(events, 2), 5);
assert.equal(nextAfter(events, 99), events.length);
assert.equal(nextAfter([], 5), 0);

let at = snapshotAt(events, 2.5);
assert.deepEqual([at.document.doc, at.driver.driver, at.presence.followers, at.state.seq, at.next], ['a', 'd1', 2, 2, 5]);
at = snapshotAt(events, 0.5);
assert.equal(at.state, null, 'no state before the first');
assert.equal(at.presence, null);
at = snapshotAt(events, 10);
assert.deepEqual([at.document.doc, at.state.seq, at.next], ['b', 3, 7]);

// A recording opened in the browser: its documents as escaped text, bad lines named.
assert.equal(plainHTML('a <b> & "c"\n\n\n</script><img src=x onerror=alert(1)>\u2028'),
  '<p class="block">a &#60;b&#62; &#38; &#34;c&#34;</p>\n<p class="block">&#60;/script&#62;&#60;img src=x onerror=alert(1)&#62;\u2028</p>');
const header = { format: 'scrollsync-recording', version: 1, room: 'talk', started: 'x', url: 'ws://h/rooms/talk',
                 document: { type: 'document', doc: 'f1', name: 't.md', text: '# <T>' } };
const file = [JSON.stringify(header), '[0.5,{"type":"state","seq":1,"progress":0.5}]', '[2,{"type":"driver","driver":null}]', ''].join('\n');
const data = parseRecording(file);
assert.equal(data.duration, 2);
assert.deepEqual(data.events.map((e) => e[1].type), ['document', 'state', 'driver']);
assert.equal(data.documents.f1.html, '<p class="block"># &#60;T&#62;</p>');
assert.equal(parseRecording(file, { f1: { html: '<h1 id="t">T</h1>' } }).documents.f1.html, '<h1 id="t">T</h1>', 'a document the page knows keeps its layout');
const refused = (text) => { try { parseRecording(text); return null; } catch (error) { return error.message; } };
assert.match(refused('{"format":"other"}'), /^line 1: not a ScrollSync recording/);
assert.match(refused(JSON.stringify(header) + '\n[1,{"type":"state"}]\n[0.5,{"type":"state"}]'), /^line 3: .*time order/);
assert.match(refused(JSON.stringify(header) + '\n[1,{"type":"scroll"}]'), /^line 2: not a recorded message/);
assert.match(refused(JSON.stringify(header) + '\n{oops'), /^line 2: not JSON/);
assert.match(refused(JSON.stringify(header) + '\n[1,{"type":"document","doc":"d"}]'), /^line 2: a document needs/);
console.log('viewer-player checks: ok');
