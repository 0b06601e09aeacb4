#!/usr/bin/env node
// Exchange text and binary messages with an echo endpoint using Debian's node-ws.
// usage: node echo_ws.js URL [--deflate] [--sizes 0,125,...]
// Prints 'ok KIND SIZE' per echoed message; exits non-zero on any mismatch.
'use strict';
const path = require('path');
let wsDir;
try { wsDir = path.dirname(require.resolve('ws')); } catch (e) { wsDir = '/usr/share/nodejs/ws'; }
const WebSocket = require(wsDir);

const url = process.argv[2];
const deflate = process.argv.includes('--deflate');
let sizes = [0, 125, 126, 65535, 65536, 16 * 1024 * 1024];
const at = process.argv.indexOf('--sizes');
if (at > 0) sizes = process.argv[at + 1].split(',').map(Number);

const ws = new WebSocket(url, { perMessageDeflate: deflate, rejectUnauthorized: false, maxPayload: 64 * 1024 * 1024 });
const queue = [];
for (const size of sizes) {
  let text = '';
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  text = letters.repeat(Math.ceil(size / 26) + 1).slice(0, size);
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i++) data[i] = (i * 7) & 0xff;
  queue.push(['text', size, text], ['binary', size, data]);
}
let current = null;
function next() {
  current = queue.shift();
  if (!current) { ws.close(1000, 'done'); return; }
  ws.send(current[2], { binary: current[0] === 'binary' });
}
ws.on('open', () => {
  console.log('extensions: ' + (ws.extensions || 'none'));
  next();
});
ws.on('message', (message, isBinary) => {
  const [kind, size, sent] = current;
  const ok = kind === 'binary' ? isBinary && Buffer.compare(message, sent) === 0 : !isBinary && message.toString() === sent;
  if (!ok) { console.log(`mismatch ${kind} ${size}`); process.exit(1); }
  console.log(`ok ${kind} ${size}`);
  next();
});
ws.on('close', (code) => { console.log('closed ' + code); process.exit(queue.length === 0 && current === undefined ? 0 : 1); });
ws.on('error', (err) => { console.log('error ' + err.message); process.exit(1); });
setTimeout(() => { console.log('timeout'); process.exit(1); }, 120000);
