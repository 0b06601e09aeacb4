// PROTOCOL.md §3, "Following a state", as pure functions: no page, no network, so that they
// run (and are tested) under node as they run in the browser. Units are the view's own
// (pixels in the browser, rows in the vectors).

/** Rounds half away from zero, as §3 says (Math.round rounds -2.5 to -2). */
export function roundHalfAway(x) {
  return Math.sign(x) * Math.round(Math.abs(x));
}

const within01 = (x) => Math.min(1, Math.max(0, Number(x) || 0));

/**
 * Where a view's top goes for state `s`: atTop → 0, atBottom → `max`; else the anchor's
 * block (`blockNamed(id)` gives `{ top, height }` in this view, or null) at `top + min(round(
 * fraction × height), height − 1)`; else `round(progress × max)`; else `round(offset)`;
 * then clamped to 0…max (`max`: the view's content less its viewport).
 */
export function topFor(s, blockNamed, max) {
  if (max <= 0 || s.atTop) return 0;
  if (s.atBottom) return max;
  let y = null;
  if (s.anchor && typeof s.anchor.id === 'string') {
    const block = blockNamed(s.anchor.id);
    if (block) y = block.top + Math.min(roundHalfAway(within01(s.anchor.fraction) * block.height), block.height - 1);
  }
  if (y === null && typeof s.progress === 'number') y = roundHalfAway(s.progress * max);
  if (y === null) y = roundHalfAway(Number(s.offset) || 0);
  return Math.min(max, Math.max(0, y));
}

/** The anchor of a view whose top is at `top`: the first of `blocks` ({ id, top, height }, in
 *  order) that reaches below it, and how far into it the top is; null past the last. */
export function anchorAt(top, blocks) {
  for (const block of blocks) {
    if (block.top + block.height > top) return { id: block.id, fraction: within01((top - block.top) / block.height) };
  }
  return null;
}
