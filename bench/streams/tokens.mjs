// Token-rate streams bench: chunks written through core's own stream writer
// (WorkflowServerWritableStream from @workflow/core 5.0.0-beta.55, the sink behind getWritable()
// in a step, with its group commit and the World's streamFlushIntervalMs) and read live by
// (a) a reader in the writer's process, (b) a reader in another process (polling only).
// Prints the latency/cost table; asserts nothing.
//
//   node bench/streams/tokens.mjs                 measure the current build (.tmp/bench-streams)
//   node bench/streams/tokens.mjs --sweep         also sweep flush/burst windows (choosing the defaults;
//                                                  BENCH_SWEEP=0/0,30/0,0/80 = flush ms / burst ms)
//   BENCH_STREAMS_DIR=.tmp/bench-streams-before node bench/streams/tokens.mjs --save-baseline
//                                                  measure a baseline build, save it as the "before"
// The "before" column comes from bench/streams/baseline-tokens.json (measured on the code before
// issue #16, commit f1d0e53; see bench/README.md).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setWorld } from '@workflow/core/runtime';
import { WorkflowServerWritableStream } from '@workflow/core/serialization';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { importOwn } from '../lib/dist.mjs';
import { sized } from '../lib/quick.mjs';
import { countingStreamer, implDir, loadImpl, nowMs, readLatencies } from './tokens-lib.mjs';

const READER = fileURLToPath(new URL('./tokens-reader.mjs', import.meta.url));
const BASELINE = fileURLToPath(new URL('./baseline-tokens.json', import.meta.url));
/** This build, compiled by bench/streams/tsconfig.json (the repository's layout: src/, emulator/). */
const CURRENT = fileURLToPath(new URL('../../.tmp/bench-streams', import.meta.url));
const CURRENT_SRC = pathToFileURL(path.join(CURRENT, 'src')).href;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const children = [];
const enc = new TextEncoder();
const args = new Set(process.argv.slice(2));

function pct(values, p) {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
}

export function table(title, head, rows) {
  const cells = [head, ...rows].map((r) => r.map(String));
  const width = head.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  console.log(`\n${title}`);
  console.log(line(cells[0]));
  console.log(`|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const r of cells.slice(1)) console.log(line(r));
}

async function spawnReader(env, run, name) {
  const child = spawn(process.execPath, ['--no-warnings', READER], {
    env: { ...process.env, ...env, BENCH_RUN_ID: run, BENCH_STREAM: name, BENCH_STREAMS_DIR: implDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const it = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await it.next();
  if (process.env.BENCH_DEBUG) console.error('  parent: child said', first.value);
  if (first.value !== 'ready') throw new Error(`reader child said ${JSON.stringify(first.value)}`);
  // Wrapped: an awaited async function would otherwise flatten this promise and wait for EOF.
  const result = (async () => {
    const last = await it.next();
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    return JSON.parse(last.value);
  })();
  return { result };
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'BatchWriteItem', 'TransactWriteItems', 'DeleteItem']);
const sum = (byCommand, pick) => Object.entries(byCommand).reduce((n, [c, v]) => n + (pick(c) ? v : 0), 0);

/**
 * One stream: `count` chunks on a fixed schedule `gapMs` apart, written through core's writer
 * (write() is not awaited for durability: core acks into its buffer), then closed. Latency is
 * from just before write() to the reader receiving the chunk.
 */
async function scenario(impl, env, { mode, flushMs, burstMs, count, gapMs }) {
  const w = countingStreamer(impl, env, undefined, burstMs === undefined ? {} : { streamBurstMs: burstMs });
  setWorld({ specVersion: SPEC_VERSION_CURRENT, streams: w.streamer.streams, streamFlushIntervalMs: flushMs });
  const run = `wrun_tok${randomBytes(6).toString('hex')}`;
  const name = 'tokens';
  const local = mode === 'in-process' ? readLatencies(await w.streamer.streams.get(run, name)) : undefined;
  const remote = mode === 'other process' ? (await spawnReader(env, run, name)).result : undefined;
  if (process.env.BENCH_DEBUG) console.error(`  ${mode}: readers open`);
  await sleep(300);
  const writable = new WorkflowServerWritableStream(run, name);
  const writer = writable.getWriter();
  const t0 = performance.now();
  const wallStart = nowMs();
  for (let i = 0; i < count; i++) {
    const due = t0 + i * gapMs - performance.now();
    if (due > 0) await sleep(due);
    await writer.write(enc.encode(JSON.stringify({ t: nowMs(), i })));
  }
  if (process.env.BENCH_DEBUG) console.error(`  ${mode}: wrote ${count}, closing`);
  const closeStart = performance.now();
  await writer.close();
  // close() = core's drain (the buffered and in-flight groups) + the EOF put: what a step that
  // streams pays between its last write() and its end.
  const closeMs = performance.now() - closeStart;
  const wallEnd = nowMs();
  if (process.env.BENCH_DEBUG) console.error(`  ${mode}: closed`);
  const seconds = (performance.now() - t0) / 1000;
  const watchdog = setTimeout(async () => {
    const info = await w.streamer.streams.getInfo(run, name).catch((e) => e.message);
    console.error(`  ${mode}: reader still open 30 s after close; getInfo=${JSON.stringify(info)}`);
  }, 30_000);
  const got = local ? { latencies: await local, byCommand: {}, requests: 0 } : await remote;
  clearTimeout(watchdog);
  if (process.env.BENCH_DEBUG) console.error(`  ${mode}: reader got ${got.latencies.length}`);
  await w.streamer.close();
  impl.destroyClients(w.clients);
  setWorld(undefined);
  if (process.env.BENCH_DEBUG) console.error(`  ${mode}: done`);
  const lat = got.latencies;
  if (lat.length !== count) throw new Error(`reader got ${lat.length} of ${count} chunks`);
  const all = { ...w.counts.byCommand };
  for (const [c, v] of Object.entries(got.byCommand)) all[c] = (all[c] ?? 0) + v;
  const writes = sum(all, (c) => WRITES.has(c));
  const reads = sum(all, (c) => !WRITES.has(c));
  // Reads the reader sent while the writer was active (first write() to close() resolved).
  const readTimes = mode === 'in-process' ? w.counts.readTimes : got.readTimes;
  const readerReads = readTimes.filter((t) => t >= wallStart && t <= wallEnd).length;
  return {
    mode,
    flushMs,
    burstMs: w.config.streamBurstMs,
    closeMs,
    count,
    gapMs,
    seconds,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    max: Math.max(...lat),
    writesPerChunk: writes / count,
    readsPerChunk: reads / count,
    perChunk: (writes + reads) / count,
    readerReadsPerSecond: readerReads / seconds,
    /** Mean PutItem round trip of the writer (ms): the write latency floor on this machine. */
    putMs: (w.counts.msByCommand.PutItem ?? 0) / (w.counts.byCommand.PutItem || 1),
    byCommand: all,
  };
}

const RATE_COUNT = sized(100, 10);
const SPARSE_COUNT = sized(12, 2);
const RATE = { label: `50 chunks/s (20 ms apart), ${RATE_COUNT} chunks`, count: RATE_COUNT, gapMs: 20 };
const SPARSE = { label: `sparse (500 ms apart), ${SPARSE_COUNT} chunks`, count: SPARSE_COUNT, gapMs: 500 };

export async function measureTokens(impl, env, flushMs, burstMs) {
  const rows = [];
  for (const load of [RATE, SPARSE]) {
    for (const mode of ['in-process', 'other process']) {
      rows.push({
        load: load.label,
        ...(await scenario(impl, env, { mode, flushMs, burstMs, count: load.count, gapMs: load.gapMs })),
      });
    }
  }
  return rows;
}

const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');

export function printTokens(after, before) {
  const key = (r) => `${r.load}|${r.mode}`;
  const old = new Map((before?.rows ?? []).map((r) => [key(r), r]));
  table(
    `Token-rate streams through core's writer (getWritable() sink), per chunk; before = ${before?.label ?? 'not measured'}, after = this build (flush window ${after[0]?.flushMs ?? 0} ms, burst window ${after[0]?.burstMs ?? '-'} ms)`,
    [
      'load',
      'reader',
      'p50 ms before',
      'p50 after',
      'p99 before',
      'p99 after',
      'DDB req/chunk before',
      'after',
      'writes/chunk',
      'reads/chunk',
      'reader reads/s',
      'close ms',
      'PutItem ms',
    ],
    after.map((r) => {
      const b = old.get(key(r));
      return [
        r.load,
        r.mode,
        f1(b?.p50),
        f1(r.p50),
        f1(b?.p99),
        f1(r.p99),
        f2(b?.perChunk),
        f2(r.perChunk),
        f2(r.writesPerChunk),
        f2(r.readsPerChunk),
        f1(r.readerReadsPerSecond),
        f1(r.closeMs),
        f1(r.putMs),
      ];
    }),
  );
}

async function main() {
  const impl = await loadImpl();
  const stackMod = await import(pathToFileURL(path.join(CURRENT, 'emulator/stack.js')).href);
  const { reconcile } = await importOwn(CURRENT_SRC, 'provision/index.js');
  const current = await importOwn(CURRENT_SRC, 'config/index.js');
  console.log('Starting the embedded emulator stack (DynamoDB Local + fauxqs)...');
  const stack = await stackMod.startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  try {
    const env = { ...stack.env, EVE_WORLD_AWS_PREFIX: `bench-tok-${randomBytes(3).toString('hex')}` };
    const cfg = current.loadConfig(env);
    const { createClients, destroyClients } = await importOwn(CURRENT_SRC, 'aws/clients.js');
    const clients = createClients(cfg);
    await reconcile(clients, cfg, 'apply');
    destroyClients(clients);
    const flushMs = impl.loadConfig(env).streamFlushMs; // undefined on the baseline: core's default (0)
    const burstMs = undefined; // the build's own default (tuning option streamBurstMs)
    await scenario(impl, env, { mode: 'in-process', flushMs, count: sized(30, 5), gapMs: 5 }); // warm-up
    const results = {
      label: args.has('--save-baseline') ? 'commit f1d0e53 (before #16)' : 'this build',
      flushMs,
      rows: await measureTokens(impl, env, flushMs, burstMs),
    };
    if (args.has('--sweep')) {
      const sweep = [];
      // Each entry: "F" (core's flush window F, burst window off) or "F/B" (flush F, burst B).
      for (const spec of (process.env.BENCH_SWEEP ?? '0/0,30/0,90/0,0/40,0/60,0/80,0/100').split(',')) {
        const [f, b] = spec.split('/').map(Number);
        for (const r of await measureTokens(impl, env, f, Number.isFinite(b) ? b : 0)) sweep.push(r);
      }
      results.sweep = sweep;
      table(
        'Window sweep (flush = streamFlushIntervalMs, burst = tuning option streamBurstMs): latency vs DynamoDB requests per chunk',
        [
          'flush/burst ms',
          'load',
          'reader',
          'p50',
          'p99',
          'req/chunk',
          'writes/chunk',
          'reader reads/s',
          'close ms',
          'PutItem ms',
        ],
        sweep.map((r) => [
          `${r.flushMs ?? 0}/${r.burstMs ?? '-'}`,
          r.load,
          r.mode,
          f1(r.p50),
          f1(r.p99),
          f2(r.perChunk),
          f2(r.writesPerChunk),
          f1(r.readerReadsPerSecond),
          f1(r.closeMs),
          f1(r.putMs),
        ]),
      );
    }
    if (args.has('--save-baseline')) {
      writeFileSync(BASELINE, `${JSON.stringify(results, null, 2)}\n`);
      console.log(`saved ${BASELINE}`);
    }
    const before = existsSync(BASELINE) ? JSON.parse(readFileSync(BASELINE, 'utf8')) : undefined;
    printTokens(results.rows, args.has('--save-baseline') ? undefined : before);
    const out = process.env.BENCH_TOKENS_JSON;
    if (out) writeFileSync(out, JSON.stringify({ after: results, before }, null, 2));
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
    await stack.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
