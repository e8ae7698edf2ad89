// `tail` reducer cost: fold n records (events + stream chunks, as a busy token-streaming run
// produces them) into the live view's state. "after" is the reducer in dist/src/cli/tail-view.js;
// "before" is the reducer as it was at commit f1d0e53 (copied below verbatim in behaviour: it
// copied the event list / chunk list on every record). Prints a table; asserts nothing.
//   node bench/tail.mjs            (needs `npm run build`)
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sized } from './lib/quick.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The reducer before #16 (quadratic: one list copy per record). */
function reduceBefore(state, rec) {
  switch (rec.kind) {
    case 'event':
      return { ...state, events: [...state.events, rec] };
    case 'chunk': {
      const streams = new Map(state.streams);
      const cur = streams.get(rec.stream) ?? { name: rec.stream, done: false, chunks: [] };
      streams.set(rec.stream, { ...cur, chunks: [...cur.chunks, rec] });
      return { ...state, streams };
    }
    default:
      return state;
  }
}

function records(n) {
  const at = new Date(0).toISOString();
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(
      i % 10 === 0
        ? {
            kind: 'event',
            runId: 'r',
            slot: i + 1,
            eventId: `e${i}`,
            eventType: 'attr_set',
            createdAt: at,
            preview: '',
          }
        : { kind: 'chunk', runId: 'r', stream: 'default', index: i, bytes: 5, text: `tok${i}` },
    );
  }
  return out;
}

function fold(reduce, empty, recs) {
  const t = performance.now();
  let s = empty();
  for (const r of recs) s = reduce(s, r);
  return performance.now() - t;
}

export async function benchTail({ sizes = sized([20_000, 40_000, 100_000], [2_000]), beforeMax = 40_000 } = {}) {
  const view = await import(pathToFileURL(path.join(ROOT, 'dist/src/cli/tail-view.js')).href);
  const empty = () => ({ events: [], steps: new Map(), streams: new Map(), finished: false });
  fold(view.reduceTail, view.emptyTailState, records(sized(5000, 100))); // warm-up
  const rows = [];
  for (const n of sizes) {
    const recs = records(n);
    const after = fold(view.reduceTail, view.emptyTailState, recs);
    const before = n <= beforeMax ? fold(reduceBefore, empty, recs) : undefined;
    rows.push({ n, beforeMs: before, afterMs: after });
  }
  return rows;
}

export function printTail(rows) {
  const head = ['records (90% chunks, 10% events)', 'before ms', 'after ms'];
  const cells = [
    head,
    ...rows.map((r) => [
      String(r.n),
      r.beforeMs === undefined ? '(skipped: quadratic)' : r.beforeMs.toFixed(0),
      r.afterMs.toFixed(1),
    ]),
  ];
  const width = head.map((_, i) => Math.max(...cells.map((c) => c[i].length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  console.log('\ntail reducer: time to fold n records into the live view state (ms)');
  console.log(line(head));
  console.log(`|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const c of cells.slice(1)) console.log(line(c));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) printTail(await benchTail());
