// Child process of bench/streams/tokens.mjs: a live reader in another process (no in-process
// bus, polling only). Env: the stack env + BENCH_RUN_ID, BENCH_STREAM (+ BENCH_STREAMS_DIR).
// Prints "ready" once the reader is open, then one JSON line {latencies, requests, byCommand, readTimes}.
import { countingStreamer, loadImpl, readLatencies } from './tokens-lib.mjs';

if (process.env.BENCH_DEBUG) console.error('  reader child: start');
const impl = await loadImpl();
if (process.env.BENCH_DEBUG) console.error('  reader child: loaded');
const { streamer, counts, clients } = countingStreamer(impl, process.env);
if (process.env.BENCH_DEBUG) console.error('  reader child: streamer');
const stream = await streamer.streams.get(process.env.BENCH_RUN_ID, process.env.BENCH_STREAM);
if (process.env.BENCH_DEBUG) console.error('  reader child: open');
const reading = readLatencies(stream);
process.stdout.write('ready\n');
if (process.env.BENCH_DEBUG) console.error('  reader child: ready sent');
const latencies = await reading;
process.stdout.write(
  `${JSON.stringify({ latencies, requests: counts.total, byCommand: counts.byCommand, readTimes: counts.readTimes })}\n`,
);
await streamer.close();
impl.destroyClients(clients);
