// Shared by the bench parent and its child reader. Imports the streamer compiled by
// bench/streams/tsconfig.json (see the bench:streams script).
import { createClients } from '../../.tmp/bench-streams/src/aws/clients.js';
import { loadConfig } from '../../.tmp/bench-streams/src/config/index.js';
import { createContext } from '../../.tmp/bench-streams/src/context/world-context.js';
import { createStreamer } from '../../.tmp/bench-streams/src/streams/index.js';

/** Wall-clock ms with sub-ms resolution, comparable across processes on one host. */
export const nowMs = () => performance.timeOrigin + performance.now();

/** A Streamer on its own clients, with a counter of the DynamoDB requests it sends. */
export function countingStreamer(env) {
  const config = loadConfig(env);
  const clients = createClients(config);
  // times: when each request was sent (wall-clock ms), to count the ones inside a time window.
  const counts = { total: 0, byCommand: {}, times: [] };
  clients.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      counts.total++;
      counts.times.push(nowMs());
      counts.byCommand[context.commandName] = (counts.byCommand[context.commandName] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name: 'bench-request-counter' },
  );
  const streamer = createStreamer(createContext(config, clients));
  return { streamer, clients, counts, config };
}

const dec = new TextDecoder();

/** Read a latency stream to EOF; each chunk is JSON {t} stamped just before write(). */
export async function readLatencies(stream) {
  const reader = stream.getReader();
  const latencies = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return latencies;
    const at = nowMs();
    latencies.push(at - JSON.parse(dec.decode(value)).t);
  }
}
