// Table 4: streams. Reuses the streams benchmark in bench/streams (its own script,
// `npm run bench:streams`, with its own emulator stack) as a child process, and picks its
// numbers out of the markdown tables it prints.
import { runChild } from './lib/child.mjs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Parse `title` + markdown table blocks out of a text. */
export function parseTables(text) {
  const tables = [];
  let title = '';
  let cur;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('|')) {
      const cells = line.slice(1, -1).split('|').map((c) => c.trim());
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
  const { ms, out } = await runChild(npm, ['run', '--silent', 'bench:streams'], { cwd: ROOT, env: process.env, what: 'npm run bench:streams' });
  const seconds = ms / 1000;
  log(`  streams bench finished in ${seconds.toFixed(0)} s`);
  return { seconds, tables: parseTables(out), raw: out };
}

/** Find a table by a word in its title, and rows by their first cells. */
export function pick(tables, titleWord) {
  return tables.find((t) => t.title.toLowerCase().includes(titleWord.toLowerCase()));
}
