// Table 9: what the telemetry costs (docs/observability.md).
// 1. CPU per delivery: real workflows on the real core through the in-process poller, one child
//    process per mode (bench/lib/telemetry-child.mjs): no SDK and no metrics, EMF metrics on, an
//    OpenTelemetry SDK registered and metrics on. The child's own CPU (user + system) over the
//    measured runs, divided by the deliveries it made; the emulators run in other processes.
// 2. The SQS worker bundle (what the CDK construct deploys) before and after the telemetry layer:
//    bytes, and the time a fresh Node process takes to import it (the module part of a Lambda cold
//    start), median of 7. "Before" is the source tree of the parent of the commit that added
//    src/telemetry/, bundled with the same esbuild settings.
//
// `npm run bench` runs it (`--only=telemetry` alone).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runChild } from './lib/child.mjs';
import { importOwn } from './lib/dist.mjs';
import { fmt, median, table } from './lib/format.mjs';
import { QUICK, sized } from './lib/quick.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CHILD = fileURLToPath(new URL('./lib/telemetry-child.mjs', import.meta.url));
const MODES = ['off', 'metrics', 'traced'];

async function cpuPerDelivery({ stackEnv, wellKnown, dist, log, runs }) {
  // Two rounds in mirrored order (off, metrics, traced, traced, metrics, off), so drift in the
  // machine's load falls on every mode alike; the rows add both rounds up.
  const out = {};
  let round = 0;
  for (const mode of QUICK ? MODES : [...MODES, ...[...MODES].reverse()]) {
    log(`  telemetry: ${mode}...`);
    const env = { ...process.env, ...stackEnv, EVE_WORLD_AWS_PREFIX: `bench-tel-${mode}-${round++}` };
    const { out: text } = await runChild(
      process.execPath,
      ['--no-warnings', CHILD, mode, dist, wellKnown, String(runs)],
      { env, cwd: ROOT, what: `telemetry child (${mode})` },
    );
    const r = JSON.parse(text.trim().split('\n').pop());
    out[mode] ??= { mode, runs: 0, deliveries: 0, cpuMs: 0, wallMs: 0, spans: 0, emfLines: 0 };
    const acc = out[mode];
    for (const k of ['runs', 'deliveries', 'cpuMs', 'wallMs', 'spans', 'emfLines']) acc[k] += r[k];
  }
  return out;
}

/** The commit before src/telemetry/ existed, or undefined (no git, or no such commit). */
function baseCommit() {
  try {
    const added = execFileSync('git', ['log', '--diff-filter=A', '--format=%H', '--', 'src/telemetry/tracing.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .filter(Boolean)
      .pop();
    return added ? `${added}^` : undefined;
  } catch {
    return undefined;
  }
}

/** Import of `file` in a fresh process, median of 7: wall ms and CPU ms (user + system, steadier under load). */
async function importCost(file) {
  const code = `const c = process.cpuUsage(); const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); const u = process.cpuUsage(c); console.log(JSON.stringify({ ms: performance.now() - t, cpu: (u.user + u.system) / 1000 }));`;
  const wall = [];
  const cpu = [];
  for (let i = 0; i < sized(7, 1); i++) {
    const { out } = await runChild(process.execPath, ['--no-warnings', '--input-type=module', '-e', code], {
      env: { PATH: process.env.PATH },
      what: 'bundle import',
    });
    const r = JSON.parse(out.trim().split('\n').pop());
    wall.push(r.ms);
    cpu.push(r.cpu);
  }
  return { importMs: median(wall), importCpuMs: median(cpu) };
}

async function bundles({ dist, log }) {
  const { bundleWorker } = await importOwn(dist, 'cdk/bundle-worker.js');
  // Inside the repository, so the base tree resolves packages from its node_modules.
  const work = path.join(ROOT, 'node_modules', '.cache', 'eve-world-aws', 'bench-telemetry');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const result = {};
  const after = await bundleWorker(ROOT, path.join(work, 'after'), path.join(ROOT, 'src/lambda/index.ts'));
  result.after = { bytes: statSync(after).size, ...(await importCost(after)) };
  const base = QUICK ? undefined : baseCommit(); // the quick pass bundles this build only
  if (base) {
    log(`  telemetry: bundling the worker at ${base}...`);
    const tree = path.join(work, 'base');
    mkdirSync(tree, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${base} src | tar -x -C ${JSON.stringify(tree)}`], { cwd: ROOT });
    const before = await bundleWorker(
      ROOT,
      path.join(work, 'before'),
      // The /lambda entry of that commit (the consumer's handler file before the one entry at src/lambda/).
      ['src/lambda/index.ts', 'src/consumer/lambda.ts'].map((f) => path.join(tree, f)).find((f) => existsSync(f)),
    );
    result.before = { commit: base, bytes: statSync(before).size, ...(await importCost(before)) };
  }
  rmSync(work, { recursive: true, force: true });
  return result;
}

/** Cost of one span helper call with the API loaded and no SDK registered (this process has none). */
async function noSdkSpanNs(dist) {
  const { withSpan } = await importOwn(dist, 'telemetry/tracing.js');
  const fn = async () => 1;
  const n = sized(200_000, 1000);
  const time = async (f) => {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await f();
    return Number(process.hrtime.bigint() - t) / n;
  };
  await time(() => withSpan('warm', undefined, fn));
  const plain = await time(fn);
  const spanned = await time(() => withSpan('x', { a: 1 }, fn));
  return { plainNs: plain, spanNs: spanned, overheadNs: spanned - plain };
}

export async function benchTelemetry({ stackEnv, wellKnown, dist, log, runs = sized(8, 1) }) {
  const cpu = await cpuPerDelivery({ stackEnv, wellKnown, dist, log, runs });
  const bundle = await bundles({ dist, log });
  const noSdk = await noSdkSpanNs(dist);
  return { cpu, bundle, noSdk };
}

export function printTelemetryTable(r) {
  const off = r.cpu.off;
  const per = (m) => m.cpuMs / Math.max(1, m.deliveries);
  const rows = MODES.map((mode) => {
    const m = r.cpu[mode];
    return [
      mode,
      String(m.deliveries),
      fmt(per(m), 2),
      mode === 'off' ? '—' : `${fmt(((per(m) - per(off)) / per(off)) * 100, 1)} %`,
      String(m.spans),
      String(m.emfLines),
    ];
  });
  const b = r.bundle;
  const kb = (n) => fmt(n / 1024, 0);
  const bundleRows = [
    ...(b.before
      ? [
          [
            `before (${b.before.commit.slice(0, 8)})`,
            kb(b.before.bytes),
            fmt(b.before.importMs, 1),
            fmt(b.before.importCpuMs, 1),
          ],
        ]
      : []),
    ['after', kb(b.after.bytes), fmt(b.after.importMs, 1), fmt(b.after.importCpuMs, 1)],
  ];
  console.log(
    table(
      'Table 9a. Telemetry: CPU per delivery (in-process poller, manySteps(4), child-process CPU)',
      ['mode', 'deliveries', 'CPU ms / delivery', 'vs off', 'spans', 'EMF lines'],
      rows,
      [
        'off: no OpenTelemetry SDK, no metrics. metrics: EMF on. traced: an SDK registered (spans kept in memory) and EMF on.',
        'Two processes per mode, in mirrored order, on a shared machine: differences of a few % are within noise.',
        ...(r.noSdk
          ? [
              `No SDK: one span helper call costs ${fmt(r.noSdk.overheadNs, 0)} ns over the bare call (${fmt(r.noSdk.spanNs, 0)} vs ${fmt(r.noSdk.plainNs, 0)} ns, 200 000 calls).`,
            ]
          : []),
      ],
    ),
  );
  console.log(
    table(
      'Table 9b. SQS worker bundle (dist/lambda-worker/index.mjs)',
      ['build', 'KiB', 'import ms (median of 7)', 'import CPU ms'],
      bundleRows,
      ['import: a fresh Node process importing the bundle, the module part of a Lambda cold start.'],
    ),
  );
}
