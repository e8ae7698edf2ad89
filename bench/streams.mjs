// Table 4: streams. Reuses the streams benchmark in bench/streams (its own script,
// `npm run bench:streams`, with its own emulator stack) as a child process, and picks its
// numbers out of the markdown tables it prints.
import { spawn } from 'node:child_process';
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

export function benchStreams({ log }) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const child = spawn(npm, ['run', '--silent', 'bench:streams'], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`npm run bench:streams exited ${code}:\n${err.slice(-3000)}`));
      log(`  streams bench finished in ${seconds.toFixed(0)} s`);
      resolve({ seconds, tables: parseTables(out), raw: out });
    });
  });
}

/** Find a table by a word in its title, and rows by their first cells. */
export function pick(tables, titleWord) {
  return tables.find((t) => t.title.toLowerCase().includes(titleWord.toLowerCase()));
}
