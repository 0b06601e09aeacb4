// Runs the browser viewer's PROTOCOL.md §3 mapping (viewer-follow.js, as the server serves it)
// over the follow vectors under node, and its anchor function back over the same layouts.
// usage: node viewer_follow_vectors.mjs VIEWER_FOLLOW_JS VECTOR_FILE...
// Prints one line per vector file; exits 1 naming every case that does not match.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [moduleFile, ...vectorFiles] = process.argv.slice(2);
const { topFor, anchorAt, roundHalfAway } = await import(pathToFileURL(moduleFile).href);
const failures = [];
if (roundHalfAway(-2.5) !== -3 || roundHalfAway(2.5) !== 3) failures.push('roundHalfAway does not round half away from zero');
for (const file of vectorFiles) {
  const { cases } = JSON.parse(readFileSync(file, 'utf8'));
  for (const vector of cases) {
    let row = 0;
    const blocks = vector.heights.map(([id, height]) => { const block = { id, top: row, height }; row += height; return block; });
    const max = Math.max(0, row - vector.viewport);
    const top = topFor(vector.state, (id) => blocks.find((b) => b.id === id) ?? null, max);
    const block = blocks.find((b) => b.top <= top && top < b.top + b.height)?.id;
    if (top !== vector.top || block !== vector.block) {
      failures.push(`${file}: ${vector.name}: top ${top} (block ${block}), expected ${vector.top} (block ${vector.block})`);
    }
    // The anchor a presenter at that row would send names the same block.
    if (anchorAt(top, blocks)?.id !== block) failures.push(`${file}: ${vector.name}: anchorAt(${top}) is not ${block}`);
  }
  console.log(`${file}: ${cases.length} cases`);
}
for (const failure of failures) console.error(failure);
process.exit(failures.length === 0 ? 0 : 1);
