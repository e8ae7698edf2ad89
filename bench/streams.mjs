// Table 4: streams. Runs the streams benchmarks in bench/streams as child processes, each with
// its own emulator stack (`npm run bench:streams`: the streamer API directly; `npm run
// bench:tokens`: token-rate latency/cost through core's writer, before/after; bench/throughput.mjs:
// BENCH_THROUGHPUT_RUNS (default 200) concurrent runs on both Worlds), plus the `tail` reducer
// bench (bench/tail.mjs, in process), and picks the numbers out of the markdown tables they print.

import { fileURLToPath } from 'node:url';
import { runChild } from './lib/child.mjs';
import { sized } from './lib/quick.mjs';
import { benchTail, printTail } from './tail.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Parse `title` + markdown table blocks out of a text. */
export function parseTables(text) {
  const tables = [];
  let title = '';
  let cur;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('|')) {
      const cells = line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim());
      if (!cur) {
        cur = { title, head: cells, rows: [] };
        tables.push(cur);
      } else if (!/^:?-+:?$/.test(cells[0])) cur.rows.push(cells);
    } else {
      cur = undefined;
      if (line) title = line;
    }
  }
  return tables;
}

export async function benchStreams({ log }) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const { ms, out } = await runChild(npm, ['run', '--silent', 'bench:streams'], {
    cwd: ROOT,
    env: process.env,
    what: 'npm run bench:streams',
  });
  log(`  streams bench finished in ${(ms / 1000).toFixed(0)} s`);
  // bench:tokens is bench:streams' compile (just done) and this file.
  const tok = await runChild(process.execPath, ['--no-warnings', 'bench/streams/tokens.mjs'], {
    cwd: ROOT,
    env: process.env,
    what: 'bench/streams/tokens.mjs (npm run bench:tokens)',
  });
  log(`  token-rate bench finished in ${(tok.ms / 1000).toFixed(0)} s`);
  const runs = process.env.BENCH_THROUGHPUT_RUNS ?? String(sized(200, 10));
  const tp = await runChild(process.execPath, ['--no-warnings', 'bench/throughput.mjs', `--runs=${runs}`], {
    cwd: ROOT,
    env: process.env,
    what: 'bench/throughput.mjs',
  });
  log(`  throughput bench (${runs} runs) finished in ${(tp.ms / 1000).toFixed(0)} s`);
  const tail = await benchTail();
  const lines = [];
  const log0 = console.log;
  console.log = (l) => lines.push(l);
  try {
    printTail(tail);
  } finally {
    console.log = log0;
  }
  const raw = `${out}\n${tok.out}\n${tp.out}\n${lines.join('\n')}`;
  return { seconds: (ms + tok.ms + tp.ms) / 1000, tables: parseTables(raw), raw, tail };
}

/** Find a table by a word in its title, and rows by their first cells. */
export function pick(tables, titleWord) {
  return tables.find((t) => t.title.toLowerCase().includes(titleWord.toLowerCase()));
}
