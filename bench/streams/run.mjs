// Streams benchmark: write->read latency (in-process reader vs a reader in another process),
// read requests per idle stream-second, and writeMulti throughput. Prints tables; asserts nothing.
// Run with `npm run bench:streams` (compiles the streamer into .tmp/bench-streams first).
// Starts its own embedded emulator stack (DynamoDB Local + fauxqs) and always stops it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startStack } from '../../.tmp/bench-streams/emulator/stack.js';
import { destroyClients } from '../../.tmp/bench-streams/src/aws/clients.js';
import { reconcile } from '../../.tmp/bench-streams/src/provision/index.js';
import { sized } from '../lib/quick.mjs';
import { countingStreamer, nowMs, readLatencies } from './shared.mjs';

const READER = fileURLToPath(new URL('./reader.mjs', import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Children this bench spawned (killed by pid in the finally block if still running). */
const children = [];
const runId = () => `wrun_bench${randomBytes(6).toString('hex')}`;

function pct(values, p) {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
}

function table(title, head, rows) {
  const cells = [head, ...rows].map((r) => r.map(String));
  const width = head.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  console.log(`\n${title}`);
  console.log(line(cells[0]));
  console.log(`|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const r of cells.slice(1)) console.log(line(r));
}

/** Spawn the other-process reader and wait until its reader is open. */
async function spawnReader(env, run, name) {
  const child = spawn(process.execPath, ['--no-warnings', READER], {
    env: { ...process.env, ...env, BENCH_RUN_ID: run, BENCH_STREAM: name },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout });
  const it = lines[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.value !== 'ready') throw new Error(`reader child said ${JSON.stringify(first.value)}`);
  const result = (async () => {
    const last = await it.next();
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    return JSON.parse(last.value);
  })();
  return { child, result };
}

/** Writes `count` latency-stamped chunks, one write() at a time, `gapMs` apart, then closes. */
async function writeStamped(streamer, run, name, count, gapMs) {
  for (let i = 0; i < count; i++) {
    await streamer.streams.write(run, name, JSON.stringify({ t: nowMs(), i }));
    if (gapMs > 0) await sleep(gapMs);
  }
  await streamer.streams.close(run, name);
}

async function latencyScenario(env, writer, label, count, gapMs) {
  const run = runId();
  const name = 'bench/latency';
  const local = countingStreamer(env); // in-process reader: own instance and clients, shared signal
  const localRead = readLatencies(await local.streamer.streams.get(run, name));
  const remote = await spawnReader(env, run, name);
  await sleep(300); // both readers have polled the empty stream at least once
  const t0 = performance.now();
  const wallStart = nowMs();
  await writeStamped(writer, run, name, count, gapMs);
  const seconds = (performance.now() - t0) / 1000;
  const wallEnd = nowMs();
  // Reads per second while the writer is active: requests sent between the first write and the close.
  const inWindow = (times) => times.filter((t) => t >= wallStart && t <= wallEnd).length;
  const localLat = await localRead;
  const remoteRes = await remote.result;
  await local.streamer.close();
  destroyClients(local.clients);
  const row = (reader, lat, requests) => [
    label,
    reader,
    lat.length,
    pct(lat, 50).toFixed(1),
    pct(lat, 99).toFixed(1),
    Math.max(...lat).toFixed(1),
    (requests / seconds).toFixed(1),
  ];
  return [
    row('in-process (signal)', localLat, inWindow(local.counts.times)),
    row('other process (poll)', remoteRes.latencies, inWindow(remoteRes.times)),
  ];
}

async function idleScenario(env, writer, seconds) {
  const run = runId();
  const name = 'bench/idle';
  await writer.streams.write(run, name, 'x'); // the stream exists and is open, then goes quiet
  const reader = countingStreamer(env);
  const stream = await reader.streamer.streams.get(run, name, 1);
  const r = stream.getReader();
  const pending = r.read();
  await sleep(seconds * 1000);
  const total = reader.counts.total;
  // Steady state: a further half window, after the backoff has reached the idle interval.
  await sleep((seconds / 2) * 1000);
  const steady = (reader.counts.total - total) / (seconds / 2);
  await r.cancel();
  await pending;
  destroyClients(reader.clients);
  return [
    [`first ${seconds} s after open (backoff ramp)`, seconds, total, (total / seconds).toFixed(2)],
    [`steady state (next ${seconds / 2} s)`, seconds / 2, Math.round(steady * (seconds / 2)), steady.toFixed(2)],
  ];
}

async function throughputScenario(writerFactory, label, { writers, calls, perCall, bytes }) {
  const run = runId();
  const name = 'bench/throughput';
  const payload = 'x'.repeat(bytes);
  const instances = Array.from({ length: writers }, writerFactory);
  const t0 = performance.now();
  await Promise.all(
    instances.map(async ({ streamer }) => {
      for (let c = 0; c < calls; c++) {
        if (perCall === 1) await streamer.streams.write(run, name, payload);
        else
          await streamer.streams.writeMulti(
            run,
            name,
            Array.from({ length: perCall }, () => payload),
          );
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const info = await instances[0].streamer.streams.getInfo(run, name);
  const chunks = writers * calls * perCall;
  if (info.tailIndex !== chunks - 1) throw new Error(`expected ${chunks} chunks, stream has ${info.tailIndex + 1}`);
  const requests = instances.reduce((n, i) => n + i.counts.total, 0);
  for (const i of instances) {
    await i.streamer.close();
    destroyClients(i.clients);
  }
  return [label, writers, perCall, bytes, chunks, seconds.toFixed(2), Math.round(chunks / seconds), requests];
}

async function main() {
  console.log('Starting the embedded emulator stack (DynamoDB Local + fauxqs)...');
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  try {
    const env = { ...stack.env, EVE_WORLD_AWS_PREFIX: `bench-streams-${randomBytes(3).toString('hex')}` };
    const writer = countingStreamer(env);
    await reconcile(writer.clients, writer.config, 'apply');
    const { streamPollMs, streamIdlePollMs } = writer.config;
    console.log(
      `DynamoDB Local on 127.0.0.1, Node ${process.version}; streamPollMs=${streamPollMs}, streamIdlePollMs=${streamIdlePollMs}`,
    );

    // Warm up the JVM and connections so the first scenario is not penalised.
    await throughputScenario(() => countingStreamer(env), 'warm-up', { writers: 1, calls: 20, perCall: 25, bytes: 64 });
    await latencyScenario(env, writer.streamer, 'warm-up', sized(50, 5), 5);

    const steady = sized(300, 20);
    const sparse = sized(20, 3);
    const latency = [
      ...(await latencyScenario(env, writer.streamer, `steady flow: ${steady} chunks, 10 ms apart`, steady, 10)),
      ...(await latencyScenario(env, writer.streamer, `sparse: ${sparse} chunks, 500 ms apart`, sparse, 500)),
    ];
    table(
      'Write -> read latency (ms, from before write() to the reader receiving the chunk)',
      ['scenario', 'reader', 'chunks', 'p50', 'p99', 'max', 'read req/s'],
      latency,
    );

    table(
      'Read requests on an idle stream (one live reader, per stream-second)',
      ['window', 'seconds', 'requests', 'req/s'],
      await idleScenario(env, writer.streamer, sized(10, 2)),
    );

    const factory = () => countingStreamer(env);
    table(
      'Write throughput (one stream; writers are separate World instances)',
      ['mode', 'writers', 'chunks/call', 'bytes', 'chunks', 'seconds', 'chunks/s', 'DDB requests'],
      [
        await throughputScenario(factory, 'write() awaited one by one', {
          writers: 1,
          calls: sized(500, 20),
          perCall: 1,
          bytes: 64,
        }),
        await throughputScenario(factory, 'writeMulti', { writers: 1, calls: sized(100, 2), perCall: 100, bytes: 64 }),
        await throughputScenario(factory, 'writeMulti', { writers: 1, calls: sized(20, 1), perCall: 500, bytes: 64 }),
        await throughputScenario(factory, 'writeMulti', { writers: 1, calls: sized(40, 2), perCall: 100, bytes: 4096 }),
        await throughputScenario(factory, 'writeMulti, concurrent writers', {
          writers: 4,
          calls: sized(25, 1),
          perCall: 100,
          bytes: 64,
        }),
      ],
    );
    await writer.streamer.close();
    destroyClients(writer.clients);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
    await stack.stop();
  }
}

await main();
