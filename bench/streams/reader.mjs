// Child process of bench/streams/run.mjs: a live reader in another process (so it has no
// in-process signal and relies on polling alone). Env: the stack env + BENCH_RUN_ID, BENCH_STREAM.
// Prints "ready" once the reader is open, then one JSON line {latencies, requests, times} at EOF.
import { destroyClients } from '../../.tmp/bench-streams/src/aws/clients.js';
import { countingStreamer, readLatencies } from './shared.mjs';

const { streamer, counts, clients } = countingStreamer(process.env);
const stream = await streamer.streams.get(process.env.BENCH_RUN_ID, process.env.BENCH_STREAM);
const reading = readLatencies(stream);
process.stdout.write('ready\n');
const latencies = await reading;
process.stdout.write(`${JSON.stringify({ latencies, requests: counts.total, times: counts.times })}\n`);
await streamer.close();
destroyClients(clients);
