// Measurement plumbing shared by the workflow benches: SDK middleware that records every AWS call
// (service, command, start/end, consumed capacity) and a wrapper that records every World call.
// Middleware is used for measurement only: the one change it makes to a request is to ask
// DynamoDB for ConsumedCapacity, which does not change what the request does.
import { AsyncLocalStorage } from 'node:async_hooks';

/** Calls made inside `observe()` (the bench's own reads) are recorded as observer calls. */
const observerScope = new AsyncLocalStorage();
export const observe = (fn) => observerScope.run(true, fn);

/** Calls made inside `tagged(tag, fn)` carry `tag` (bench/session.mjs tags each delivery's calls). */
const tagScope = new AsyncLocalStorage();
export const tagged = (tag, fn) => tagScope.run(tag, fn);

/** DynamoDB commands that accept ReturnConsumedCapacity. */
export const CAPACITY_COMMANDS = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'GetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'TransactWriteItemsCommand',
  'TransactGetItemsCommand',
  'BatchWriteItemCommand',
  'BatchGetItemCommand',
]);

/** A recorder: one entry per AWS call (retries inside the SDK are one call). */
export function createRecorder() {
  const calls = [];
  const t0 = performance.now();
  return {
    calls,
    /** Called with each entry as its call finishes (e.g. the billing book, lib/billing.mjs). */
    onEnd: undefined,
    now: () => performance.now() - t0,
    /** Calls recorded since `mark` (an index returned by `mark()`). */
    mark: () => calls.length,
    since: (mark) => calls.slice(mark),
  };
}

function sumCapacity(cc) {
  // cc: one ConsumedCapacity or an array (transactions / batches), INDEXES detail.
  const list = Array.isArray(cc) ? cc : cc ? [cc] : [];
  let total = 0;
  let table = 0;
  let gsi = 0;
  for (const c of list) {
    total += c.CapacityUnits ?? 0;
    table += c.Table?.CapacityUnits ?? 0;
    for (const g of Object.values(c.GlobalSecondaryIndexes ?? {})) gsi += g.CapacityUnits ?? 0;
  }
  return list.length ? { total, table, gsi } : undefined;
}

/**
 * Add the recording middleware to every client of an AwsClients bag. S3 and Scheduler are lazy
 * (`clients.s3()`), so they are created here to be instrumented before the World uses them.
 */
export async function instrumentClients(clients, recorder) {
  for (const [service, entry] of Object.entries(clients)) {
    const client = typeof entry === 'function' ? await entry() : entry;
    if (!client?.middlewareStack) continue;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const command = context.commandName.replace(/Command$/, '');
        const entry = {
          service,
          command,
          start: recorder.now(),
          end: undefined,
          ok: true,
          error: undefined,
          observer: observerScope.getStore() === true,
          capacity: undefined,
          input: undefined,
          received: undefined,
          tag: tagScope.getStore(),
        };
        if (
          service === 'ddb' &&
          CAPACITY_COMMANDS.has(context.commandName) &&
          args.input &&
          !args.input.ReturnConsumedCapacity
        ) {
          // INDEXES = TOTAL plus the table / per-GSI split.
          args.input.ReturnConsumedCapacity = 'INDEXES';
        }
        if (service === 'sqs' && command === 'ReceiveMessage') entry.waitSeconds = args.input?.WaitTimeSeconds;
        entry.input = args.input;
        recorder.calls.push(entry);
        try {
          const out = await next(args);
          entry.capacity = sumCapacity(out.output?.ConsumedCapacity);
          if (command === 'ReceiveMessage') entry.received = out.output?.Messages?.length ?? 0;
          return out;
        } catch (err) {
          entry.ok = false;
          entry.error = err?.name ?? String(err);
          entry.capacity = sumCapacity(err?.ConsumedCapacity);
          throw err;
        } finally {
          entry.end = recorder.now();
          recorder.onEnd?.(entry);
        }
      },
      { step: 'initialize', name: 'benchRecorder', priority: 'high' },
    );
  }
}

const WORLD_METHODS = {
  runs: ['get', 'list', 'cancel', 'waitForTerminalStatus'],
  steps: ['get', 'list'],
  events: ['create', 'get', 'list', 'listByCorrelationId'],
  hooks: ['get', 'getByToken', 'list'],
};

/**
 * Wrap a World's storage and queue methods in place to record each call (name, event type) and
 * to notice events as they are written, so the bench can await a run's progress (hook created,
 * run finished) without polling the World itself.
 */
export function instrumentWorld(world, recorder) {
  const worldCalls = [];
  const seen = new Map(); // `${runId} ${eventType}` -> true
  const waiters = new Map(); // same key -> [resolve]
  const record = (name) => {
    const e = { name, start: recorder.now(), end: undefined, observer: observerScope.getStore() === true };
    worldCalls.push(e);
    return e;
  };
  const notify = (runId, type) => {
    const key = `${runId} ${type}`;
    seen.set(key, recorder.now());
    for (const resolve of waiters.get(key) ?? []) resolve(seen.get(key));
    waiters.delete(key);
  };
  for (const [ns, methods] of Object.entries(WORLD_METHODS)) {
    const target = world[ns];
    if (!target) continue;
    for (const m of methods) {
      const orig = target[m];
      if (typeof orig !== 'function') continue;
      target[m] = async function (...args) {
        let name = `${ns}.${m}`;
        if (ns === 'events' && m === 'create') name += `:${args[1]?.eventType}`;
        const e = record(name);
        try {
          const out = await orig.apply(this, args);
          if (ns === 'events' && m === 'create') {
            const type = args[1]?.eventType;
            const runId = args[0] ?? out?.run?.runId;
            e.end = recorder.now();
            if (type === 'run_completed' || type === 'run_failed' || type === 'run_cancelled')
              notify(runId, 'terminal');
            notify(runId, type);
          }
          return out;
        } finally {
          e.end ??= recorder.now();
        }
      };
    }
  }
  const origQueue = world.queue;
  world.queue = async function (...args) {
    const e = record('queue');
    try {
      return await origQueue.apply(this, args);
    } finally {
      e.end = recorder.now();
    }
  };
  return {
    worldCalls,
    /** Tell the waiters an event was written (by another World instance, e.g. a fresh one per delivery). */
    notify(runId, type) {
      if (type === 'run_completed' || type === 'run_failed' || type === 'run_cancelled') notify(runId, 'terminal');
      notify(runId, type);
    },
    mark: () => worldCalls.length,
    since: (mark) => worldCalls.slice(mark),
    /** Resolves (with the recorder time) once an event of `type` was written for the run; `terminal` = any run end. */
    event(runId, type) {
      const key = `${runId} ${type}`;
      if (seen.has(key)) return Promise.resolve(seen.get(key));
      return new Promise((resolve) => waiters.set(key, [...(waiters.get(key) ?? []), resolve]));
    },
    /** Calls not yet returned. */
    inFlight: () => worldCalls.filter((c) => c.end === undefined).length,
  };
}
