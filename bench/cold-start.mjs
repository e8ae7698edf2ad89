// Table 5: cold start. A fresh Node process imports a World and calls createWorld() (what a
// Lambda cold start pays before its first delivery), 10 times; and the size of the import graph.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runChild } from './lib/child.mjs';
import { median, pct } from './lib/format.mjs';
import { sized } from './lib/quick.mjs';

const HOOKS = pathToFileURL(fileURLToPath(new URL('./lib/graph-hooks.mjs', import.meta.url))).href;

async function runNode(code, { env, cwd }) {
  const { ms, out } = await runChild(process.execPath, ['--no-warnings', '--input-type=module', '-e', code], {
    env,
    cwd,
    what: 'cold-start child',
  });
  return { wall: ms, result: JSON.parse(out.trim().split('\n').pop()) };
}

/**
 * The timed child: import + createWorld(), timed inside the process: wall time, and the CPU time
 * the process spent on it (user + system, all threads), which other work on the machine disturbs less.
 */
const timedCode = (url, factory) => `
const boot = performance.now();
const t = performance.now();
const cpu0 = process.cpuUsage();
const m = await import(${JSON.stringify(url)});
const world = m.${factory}();
const ms = performance.now() - t;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, boot }));
process.exit(0);
`;

/** The graph child: same, with a loader hook recording ESM files and require.cache for CJS files. */
const graphCode = (url, factory, out) => `
import { register, createRequire } from 'node:module';
register(${JSON.stringify(HOOKS)}, { data: { out: ${JSON.stringify(out)} } });
const m = await import(${JSON.stringify(url)});
m.${factory}();
const cjs = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ cjs }));
process.exit(0);
`;

function packageOf(file) {
  const i = file.lastIndexOf('node_modules/');
  if (i < 0) return '(this package)';
  const rest = file.slice(i + 'node_modules/'.length).split('/');
  return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
}

/** The AWS SDK service clients among `byPackage` (e.g. `client-dynamodb`). */
const awsClients = (byPackage) =>
  Object.keys(byPackage)
    .filter((p) => p.startsWith('@aws-sdk/client-'))
    .map((p) => p.slice('@aws-sdk/'.length))
    .sort();

async function graph(url, factory, opts, own) {
  const dir = mkdtempSync(path.join(tmpdir(), 'eve-bench-graph-'));
  const out = path.join(dir, 'esm.txt');
  try {
    const { result } = await runNode(graphCode(url, factory, out), opts);
    let esm = [];
    try {
      esm = readFileSync(out, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((u) => fileURLToPath(u));
    } catch {}
    const files = new Set([...esm, ...result.cjs.filter((f) => path.isAbsolute(f))]);
    const byPackage = {};
    let bytes = 0;
    for (const f of files) {
      let size = 0;
      try {
        size = statSync(f).size;
      } catch {}
      bytes += size;
      const p = packageOf(f);
      byPackage[p] ??= { files: 0, bytes: 0 };
      byPackage[p].files++;
      byPackage[p].bytes += size;
    }
    const top = Object.entries(byPackage).sort((a, b) => b[1].bytes - a[1].bytes);
    return {
      files: files.size,
      ownFiles: byPackage[own]?.files ?? 0,
      awsClients: awsClients(byPackage),
      esmFiles: esm.length,
      cjsFiles: files.size - esm.length,
      bytes,
      packages: top.length,
      topPackages: top.slice(0, 8).map(([name, v]) => ({ name, ...v })),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * @param targets [{ name, url, factory, env, own }]: what to import (a file: URL or a package name
 *   resolvable from `cwd`), the factory to call with no arguments, and the package whose files
 *   are the World's own modules (`(this package)` for a dist/ outside node_modules).
 *
 * Samples are taken round-robin (one run of each target, then the next round), so that load from
 * other work on the machine falls on every target alike instead of on whichever ran at the time.
 */
export async function benchColdStart({ targets, runs = sized(10, 1), log }) {
  const dirs = [];
  try {
    const plan = targets.map((t) => {
      const cwd = mkdtempSync(path.join(tmpdir(), 'eve-bench-cold-'));
      dirs.push(cwd);
      return { t, opts: { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...t.env }, cwd: t.cwd ?? cwd } };
    });
    // Warm the OS file cache once per target, untimed.
    for (const p of plan) await runNode(timedCode(p.t.url, p.t.factory), p.opts);
    const samples = plan.map(() => []);
    for (let i = 0; i < runs; i++) {
      for (const [k, p] of plan.entries()) samples[k].push(await runNode(timedCode(p.t.url, p.t.factory), p.opts));
    }
    const results = [];
    for (const [k, { t, opts }] of plan.entries()) {
      const importMs = samples[k].map((s) => s.result.ms);
      const processMs = samples[k].map((s) => s.wall);
      const cpuMs = samples[k].map((s) => s.result.cpuMs);
      const g = await graph(t.url, t.factory, opts, t.own ?? '(this package)');
      results.push({
        name: t.name,
        runs,
        importAndCreateMs: importMs,
        importAndCreateMsMedian: median(importMs),
        importAndCreateMsP90: pct(importMs, 90),
        importAndCreateCpuMs: cpuMs,
        importAndCreateCpuMsMedian: median(cpuMs),
        processWallMs: processMs,
        processWallMsMedian: median(processMs),
        graph: g,
      });
      log(`  cold start ${t.name}: median ${median(importMs).toFixed(0)} ms, ${g.files} files`);
    }
    return results;
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
