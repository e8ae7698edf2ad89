// Shared by the token-rate bench (tokens.mjs) and its other-process reader (tokens-reader.mjs).
// The streamer under test is loaded from a compiled src tree (BENCH_STREAMS_DIR, default
// .tmp/bench-streams), so the same bench measures the current code and a saved baseline build.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importOwn } from '../lib/dist.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const implDir = path.resolve(ROOT, process.env.BENCH_STREAMS_DIR ?? '.tmp/bench-streams');

/** Wall-clock ms with sub-ms resolution, comparable across processes on one host. */
export const nowMs = () => performance.timeOrigin + performance.now();

export async function loadImpl() {
  // This build compiles the repository root (src/ and emulator/); a baseline build may be a flat src tree.
  const src = pathToFileURL(existsSync(path.join(implDir, 'src')) ? path.join(implDir, 'src') : implDir).href;
  const [{ createClients, destroyClients }, { loadConfig }, { createContext }, { createStreamer }] = await Promise.all([
    importOwn(src, 'aws/clients.js'),
    importOwn(src, 'config/index.js', 'config.js'),
    importOwn(src, 'context/world-context.js', 'context.js'),
    importOwn(src, 'streams/index.js', 'streamer.js'),
  ]);
  return { createClients, destroyClients, loadConfig, createContext, createStreamer };
}

/**
 * A Streamer on its own clients, counting the DynamoDB requests it sends, by command. `tuning`:
 * the World's tuning options (e.g. `{ streamBurstMs }`); a baseline build that predates them
 * ignores the argument.
 */
export function countingStreamer(impl, env, options, tuning = {}) {
  const config = impl.loadConfig(env, tuning);
  const clients = impl.createClients(config);
  // readTimes: when each read (Query/Get) was sent, wall-clock ms, to count reads per second
  // inside the writer's active window.
  const counts = { total: 0, byCommand: {}, msByCommand: {}, readTimes: [] };
  clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      counts.total++;
      const c = context.commandName.replace(/Command$/, '');
      counts.byCommand[c] = (counts.byCommand[c] ?? 0) + 1;
      if (c === 'Query' || c === 'GetItem') counts.readTimes.push(nowMs());
      const t = performance.now();
      try {
        return await next(args);
      } finally {
        counts.msByCommand[c] = (counts.msByCommand[c] ?? 0) + performance.now() - t;
      }
    },
    { step: 'initialize', name: 'bench-request-counter' },
  );
  const streamer = impl.createStreamer(impl.createContext(config, clients), options);
  return { streamer, clients, counts, config };
}

const dec = new TextDecoder();

/** Read a stream to EOF; each chunk is JSON {t} stamped just before write(). */
export async function readLatencies(stream) {
  const reader = stream.getReader();
  const latencies = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return latencies;
    latencies.push(nowMs() - JSON.parse(dec.decode(value)).t);
  }
}
