// Busy CPU for running the suite under load (docs/layout.md, "The suite under load"): N worker
// threads that spin, in ONE process, for a fixed time, printing the 1-minute load average every
// 30 s. Stop it early with Ctrl-C or `kill <pid>` (the pid is printed first); it never outlives
// --seconds. A load average of 6 on 2 cores is about 4 spinning threads beside the suite itself.
//
//   node scripts/cpu-load.mjs --threads 4 --seconds 1800 &
//   npm test
//   kill %1
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { isMainThread, Worker } from 'node:worker_threads';

if (!isMainThread) {
  // A worker: spin until terminated.
  let x = 0;
  for (;;) x = (x * 31 + 7) % 1_000_003;
}

const { values } = parseArgs({
  options: { threads: { type: 'string', default: '4' }, seconds: { type: 'string', default: '1800' } },
});
const threads = Number(values.threads);
const seconds = Number(values.seconds);
if (!Number.isInteger(threads) || threads < 1 || !(seconds > 0)) {
  console.error('usage: node scripts/cpu-load.mjs [--threads <n>=4] [--seconds <s>=1800]');
  process.exit(2);
}
const cores = availableParallelism();
const say = (what) => console.log(`[cpu-load ${process.pid}] ${what}; load average ${loadavg()[0].toFixed(1)} on ${cores} cores`);
say(`${threads} spinning threads for ${seconds} s (stop: kill ${process.pid})`);
const workers = Array.from({ length: threads }, () => new Worker(new URL(import.meta.url)));
const report = setInterval(() => say('running'), 30_000);
const stop = async (why) => {
  clearInterval(report);
  await Promise.all(workers.map((w) => w.terminate()));
  say(`stopped (${why})`);
  process.exit(0);
};
setTimeout(() => stop('time is up'), seconds * 1000);
process.once('SIGINT', () => stop('SIGINT'));
process.once('SIGTERM', () => stop('SIGTERM'));
