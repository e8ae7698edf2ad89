// Session bench (issue 24): an agent's chat session, as eve runs one. One hook receives every
// user message; each turn is a step plus a step streaming 5 chunks (test/e2e/app/workflows/
// session.ts, compiled by the Workflow DevKit builder, run by the real @workflow/core). The client
// resumes the hook, then reads the run's stream until the turn's last chunk, then sends the next
// message at once. Measured side by side on eve-world-aws (in-process consumer, default
// configuration) and @workflow/world-local in one process, plus a cold session where every
// delivery gets a fresh World (no in-memory state, as a cold Lambda container).
//
// Per turn: latency (resumeHook() called -> last chunk read), AWS requests by command, DynamoDB
// write units as AWS bills them (lib/billing.mjs, from the requests actually sent) beside
// DynamoDB Local's report, and a critical-path breakdown from timestamps (SDK middleware on the
// clients, wrappers on the World's methods and on the flow handler).
//
// `npm run bench -- --only=session` runs it in the suite; `node bench/session.mjs` alone (after
// `npm run build`), `--turns=N` (default 100), `--skip-local`, `--skip-cold`; BENCH_DIST=<dir>
// measures another build (e.g. the code before a change), BENCH_SESSION_JSON=<file> saves the result.
// `--runs=3` runs this World and world-local interleaved, three times each, behind an idle gate
// (`--max-load=0.5`, `--force`), and prints the table docs/benchmarks.md quotes (session-runs.mjs).
import './lib/polyfills.mjs';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createBilling } from './lib/billing.mjs';
import { importOwn, srcOutOf, stackUrlOf } from './lib/dist.mjs';
import { fmt, mean, pct, table } from './lib/format.mjs';
import { createRecorder, instrumentClients, instrumentWorld, tagged } from './lib/meter.mjs';
import { sized } from './lib/quick.mjs';

const CHUNKS = 5;
const WARMUP_TURNS = Number(process.env.BENCH_SESSION_WARMUP ?? sized(5, 1));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let flowInstances = 0;
export async function loadSessionApp(wellKnown) {
  const manifest = JSON.parse(readFileSync(path.join(wellKnown, 'manifest.json'), 'utf8'));
  const workflows = manifest.workflows['workflows/session.ts'];
  // A fresh copy of the flow route per World (core's route caches the first World's queue handler).
  const flow = await import(`${pathToFileURL(path.join(wellKnown, 'flow.mjs')).href}?session=${++flowInstances}`);
  const api = await import('workflow/api');
  const runtime = await import('workflow/runtime');
  return { workflow: workflows.chatSession, flow, api, runtime };
}

/** Wrap a flow handler to timestamp each delivery (start, end) on the recorder. */
function timedHandler(handler, rec, deliveries) {
  return async (req) => {
    const d = { start: rec.now(), end: undefined };
    deliveries.push(d);
    try {
      // The delivery's AWS calls carry `d` (attributeCalls tells them from the queue's and the client's).
      return await tagged(d, () => handler(req));
    } finally {
      d.end = rec.now();
    }
  };
}

/** Record, per World call, the event type and (for steps) which step; `instrumentWorld` records names only. */
function stampStepNames(world, rec, stamps) {
  const orig = world.events.create;
  world.events.create = async function (runId, data, ...rest) {
    const e = {
      type: data?.eventType,
      step: data?.eventData?.stepName?.split('//').pop(),
      correlationId: data?.correlationId,
      start: rec.now(),
      end: undefined,
    };
    stamps.push(e);
    try {
      return await orig.call(this, runId, data, ...rest);
    } finally {
      e.end = rec.now();
    }
  };
}

/**
 * One session of `turns` turns. Returns per-turn timings and the recorder windows; the caller
 * accounts the calls. `beforeTurn(t)` runs before each turn's message (the cold mode uses it).
 */
export async function runSession(app, rec, wr, { turns, label, log }) {
  const token = `bench-session-${randomBytes(6).toString('hex')}`;
  const run = await app.api.start(app.workflow, [token, turns, CHUNKS]);
  const lastChunk = new Map(); // turn -> { promise, resolve, at }
  const waiter = (t) => {
    if (!lastChunk.has(t)) {
      const w = Promise.withResolvers();
      lastChunk.set(t, { ...w, at: undefined, firstAt: undefined });
    }
    return lastChunk.get(t);
  };
  const readable = run.getReadable();
  const reading = (async () => {
    for await (const chunk of readable) {
      const w = waiter(chunk.turn);
      if (chunk.i === 0) w.firstAt = rec.now();
      if (chunk.last) {
        w.at = rec.now();
        w.resolve(w.at);
      }
      if (chunk.last && chunk.turn === turns) return;
    }
  })();
  await wr.event(run.runId, 'hook_created');
  const out = [];
  for (let t = 1; t <= turns; t++) {
    const mark = rec.mark();
    const wmark = wr.mark();
    const t0 = rec.now();
    await app.api.resumeHook(token, { turn: t, text: `message ${t} of the session` });
    const t1 = await waiter(t).promise;
    out.push({ turn: t, t0, t1, firstChunkAt: waiter(t).firstAt, latencyMs: t1 - t0, mark, wmark });
  }
  await wr.event(run.runId, 'terminal');
  await reading;
  log?.(`  ${label}: ${turns} turns, p50 ${fmt(pct(out.map((x) => x.latencyMs).slice(1), 50), 0)} ms`);
  return { runId: run.runId, turns: out };
}

/** Wait until no AWS or World call is in flight (long polls aside) and nothing happened for quietMs. */
async function settle(rec, wr, quietMs = 250, maxMs = 5000) {
  const deadline = rec.now() + maxMs;
  for (;;) {
    await sleep(40);
    const busy = rec.calls.some((c) => c.end === undefined && c.command !== 'ReceiveMessage');
    const ends = rec.calls
      .slice(-50)
      .filter((c) => c.command !== 'ReceiveMessage' && c.end !== undefined)
      .map((c) => c.end);
    const quietFor = rec.now() - Math.max(0, ...ends, ...wr.worldCalls.slice(-50).map((c) => c.end ?? rec.now()));
    if ((!busy && wr.inFlight() === 0 && quietFor >= quietMs) || rec.now() > deadline) return;
  }
}

// ------------------------------------------------------------------ accounting

const DDB_READS = new Set(['GetItem', 'Query', 'Scan', 'TransactGetItems', 'BatchGetItem']);

/** The calls of turn i: from its message to the next turn's message (the last turn: to quiet). */
function turnWindows(rec, session, tEnd) {
  const ts = session.turns;
  return ts.map((t, i) => {
    const from = t.t0;
    const to = i + 1 < ts.length ? ts[i + 1].t0 : tEnd;
    const calls = rec.calls.filter((c) =>
      c.command === 'ReceiveMessage'
        ? c.end !== undefined && c.end >= from && c.end < to
        : c.start >= from && c.start < to,
    );
    return { ...t, from, to, calls };
  });
}

function accountTurn(w, billing) {
  const counts = {};
  let ddbRequests = 0;
  let sqsRequests = 0;
  let localWru = 0;
  let rru = 0;
  const billed = { total: 0, table: 0, gsi: 0, byCommand: {} };
  for (const c of w.calls) {
    if (c.observer) continue;
    if (c.command === 'ReceiveMessage') {
      if (c.received > 0) {
        counts.ReceiveMessage = (counts.ReceiveMessage ?? 0) + 1;
        sqsRequests++;
      }
      continue;
    }
    counts[c.command] = (counts[c.command] ?? 0) + 1;
    if (c.service === 'ddb') {
      ddbRequests++;
      if (DDB_READS.has(c.command)) rru += c.capacity?.total || (c.input?.ConsistentRead ? 1 : 0.5);
      else {
        localWru += c.capacity?.total ?? 0;
        const b = billing.of(c);
        if (b) {
          billed.total += b.total;
          billed.table += b.table;
          billed.gsi += b.gsi;
          billed.byCommand[c.command] = (billed.byCommand[c.command] ?? 0) + b.total;
        }
      }
    } else if (c.service === 'sqs') sqsRequests++;
  }
  return { turn: w.turn, latencyMs: w.latencyMs, counts, ddbRequests, sqsRequests, localWru, rru, billed };
}

/**
 * Where a turn's AWS calls fall, by operation: `path` = the longest chain of calls that did not
 * overlap in time between the message and the last chunk read (weighted by their measured ms:
 * what the turn waited for, one call after another), among the calls the turn can wait for: the
 * client's before the turn's delivery starts (getByToken, hook_received) and any delivery's
 * (tagged by the flow handler's wrapper; the SQS receive that brought a delivery in); `beside` =
 * the other calls in that interval (the queue's claim, SendMessage and `sent` mark beside an
 * early delivery, the copy's receive and delete);
 * `after` = calls after the last chunk was read, before the next message (the step's completion,
 * the suspension). `pathMs` is the time spent in path calls; the rest of the latency is spent
 * outside any AWS call (core's replay, the World's and the client's own code, the event loop).
 * Empty long polls are left out; a ReceiveMessage that returned a message is one call of ~0 ms.
 */
function attributeCalls(w, deliveries) {
  const calls = w.calls.filter(
    (c) => !c.observer && c.end !== undefined && (c.command !== 'ReceiveMessage' || c.received > 0),
  );
  const entered = deliveries.find((d) => d.start >= w.t0 && d.start <= w.t1)?.start ?? w.t1;
  // A delivery's own calls; the client's and the queue's only before the turn's delivery started
  // (after it they run beside it: the early delivery does not wait for the claim or the send).
  const waitable = (c) => c.tag !== undefined || c.end <= entered + 0.5;
  // A long poll's wait is not work: a ReceiveMessage that returned a message counts as a point
  // at its return (the SendMessage -> receive hop shows as time outside any call).
  const startOf = (c) => (c.command === 'ReceiveMessage' ? c.end - 0.001 : c.start);
  const inTurn = calls.filter((c) => startOf(c) >= w.t0 - 0.5 && c.end <= w.t1 + 0.5);
  // Weighted interval scheduling over the turn's waitable calls, weight = measured duration.
  const iv = inTurn.filter(waitable).sort((a, b) => a.end - b.end);
  const dur = (c) => c.end - startOf(c);
  const best = [];
  const prev = [];
  const at = (i) => (i < 0 ? 0 : best[i]);
  for (let i = 0; i < iv.length; i++) {
    let j = i - 1;
    while (j >= 0 && iv[j].end > startOf(iv[i])) j--;
    prev.push(j);
    best.push(Math.max(at(i - 1), dur(iv[i]) + at(j)));
  }
  const onPath = new Set();
  for (let i = iv.length - 1; i >= 0; ) {
    if (dur(iv[i]) + at(prev[i]) >= at(i - 1)) {
      onPath.add(iv[i]);
      i = prev[i];
    } else i--;
  }
  const out = { pathMs: at(iv.length - 1), path: {}, beside: {}, after: {} };
  const add = (bucket, c) => {
    const k = `${c.service}:${c.command}`;
    bucket[k] ??= { n: 0, ms: 0 };
    bucket[k].n++;
    bucket[k].ms += c.end - startOf(c);
  };
  for (const c of calls) {
    if (onPath.has(c)) add(out.path, c);
    else if (inTurn.includes(c)) add(out.beside, c);
    else if (c.start > w.t1) add(out.after, c);
    else add(out.beside, c); // started in the turn, ended after it
  }
  return out;
}

/**
 * Critical-path milestones of one turn, ms after the message (resumeHook called): when each
 * thing on the path finished. Steps are told apart by name (think = step 1, reply = step 2, the
 * streaming one) and matched to their step_completed by correlation id. Missing milestones
 * (world-local has no AWS calls) are undefined.
 */
function milestones(w, stamps, deliveries) {
  const inWin = (x) => x.start >= w.from && x.start < w.to;
  const rel = (t) => (t === undefined ? undefined : t - w.t0);
  const st = stamps.filter(inWin);
  const started = (name) => st.find((e) => e.type === 'step_started' && e.step === name);
  const completedOf = (e) =>
    e && stamps.find((x) => x.type === 'step_completed' && x.correlationId === e.correlationId);
  const hookRx = st.find((e) => e.type === 'hook_received');
  const send = w.calls.find((c) => c.command === 'SendMessage');
  const recv = w.calls.find((c) => c.command === 'ReceiveMessage' && c.received > 0);
  const newDelivery = deliveries.find((d) => d.start >= (hookRx?.start ?? w.t0) && d.start < w.to);
  const think = started('think');
  const reply = started('reply');
  // The previous turn's streaming step, completed inside this window (its stream drained).
  const replyCorrs = new Set(
    stamps.filter((e) => e.type === 'step_started' && e.step === 'reply').map((e) => e.correlationId),
  );
  const prevReplyDone = st.find(
    (e) => e.type === 'step_completed' && replyCorrs.has(e.correlationId) && e.correlationId !== reply?.correlationId,
  );
  // Which delivery ran this turn's first step: a new one (the hook's message) or the previous
  // turn's, continuing inline after its streaming step completed.
  const ranBy =
    think && deliveries.find((d) => d.start <= think.start && (d.end === undefined || d.end >= think.start));
  const streamPuts = w.calls.filter(
    (c) => c.command === 'PutItem' && String(c.input?.Item?.PK?.S ?? '').startsWith('STREAM#') && c.start >= w.t0,
  );
  const lastPut = streamPuts.filter((c) => c.end !== undefined && c.end <= w.t1 + 0.5).at(-1);
  const reads = (from, to) => w.calls.filter((c) => DDB_READS.has(c.command) && c.start >= from && c.start < to).length;
  return {
    hookReceivedWritten: rel(hookRx?.end),
    messageSent: rel(send?.end),
    deliveryReceived: rel(recv?.end),
    handlerEntered: rel(newDelivery?.start),
    newDeliveryEnded: rel(newDelivery?.end),
    prevStreamStepCompleted: rel(prevReplyDone?.end),
    thinkStepStartedAt: rel(think?.start),
    thinkStepStarted: rel(think?.end),
    thinkStepCompleted: rel(completedOf(think)?.end),
    replyStepStarted: rel(reply?.end),
    firstChunkPut: rel(streamPuts[0]?.end),
    firstChunkRead: rel(w.firstChunkAt),
    lastChunkPut: rel(lastPut?.end),
    lastChunkRead: rel(w.t1),
    replyStepCompleted: rel(completedOf(reply)?.end),
    streamPuts: streamPuts.length,
    ranByPreviousDelivery: ranBy ? ranBy.start < w.t0 : undefined,
    newDeliveryReads: newDelivery ? reads(newDelivery.start, newDelivery.end ?? w.to) : undefined,
    readsBeforeStep1: think ? reads(w.t0, think.start) : undefined,
  };
}

/** Debugging: every call of one turn's window, ms after its message. */
function dumpTurn(w, stamps, deliveries) {
  const rows = [
    ...w.calls.map((c) => ({
      at: c.start,
      end: c.end,
      what: `${c.command}${c.ok ? '' : ` FAILED ${c.error}`} ${c.input?.TransactItems ? c.input.TransactItems.map((t) => `${Object.keys(t)[0]}:${Object.values(t)[0].Item?.SK?.S ?? Object.values(t)[0].Key?.SK?.S}`).join(' ') : (c.input?.Item?.SK?.S ?? c.input?.Key?.SK?.S ?? '')} ${c.billed ? `billed ${c.billed.total} (gsi ${c.billed.gsi})` : ''} local ${c.capacity?.total ?? ''}${c.command === 'Query' ? ` limit ${c.input?.Limit ?? '-'} ${c.input?.IndexName ?? ''} ${JSON.stringify(c.input?.ExpressionAttributeValues ?? {}).slice(0, 160)}` : ''}`,
    })),
    ...stamps
      .filter((e) => e.start >= w.from && e.start < w.to)
      .map((e) => ({
        at: e.start,
        end: e.end,
        what: `  world events.create ${e.type} ${e.step ?? ''} ${e.correlationId ?? ''}`,
      })),
    ...deliveries
      .filter((d) => d.start >= w.from && d.start < w.to)
      .map((d) => ({ at: d.start, end: d.end, what: '  DELIVERY' })),
  ].sort((a, b) => a.at - b.at);
  console.error(`turn ${w.turn}: latency ${w.latencyMs.toFixed(1)} ms`);
  for (const r of rows)
    console.error(
      `${(r.at - w.t0).toFixed(1).padStart(7)} ${((r.end ?? Number.NaN) - w.t0).toFixed(1).padStart(7)}  ${r.what}`,
    );
}

// ------------------------------------------------------------------ the Worlds

async function scanAll(ddb, TableName) {
  const { ScanCommand } = await import('@aws-sdk/client-dynamodb');
  const items = [];
  let ExclusiveStartKey;
  do {
    const res = await ddb.send(new ScanCommand({ TableName, ExclusiveStartKey }));
    items.push(...(res.Items ?? []));
    ExclusiveStartKey = res.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

async function oursSetup({ stackEnv, dist }) {
  const { createWorld } = await importOwn(dist, 'index.js');
  const { loadConfig } = await importOwn(dist, 'config/index.js');
  const { createClients, destroyClients } = await importOwn(dist, 'aws/clients.js');
  // Provisioning moved from resources.js to provision/ (a build from before the move still works).
  const { reconcile } = await importOwn(dist, 'provision/index.js', 'resources.js');
  const { TABLE_SCHEMA } = await importOwn(dist, 'schema/keys.js', 'ddb.js');
  const config = loadConfig({ ...stackEnv, EVE_WORLD_AWS_PREFIX: `bench-session-${randomBytes(3).toString('hex')}` });
  const clients = createClients(config);
  await reconcile(clients, config, 'apply');
  const observer = createClients(config); // the bench's own reads: not counted
  return { createWorld, config, clients, observer, destroyClients, schema: TABLE_SCHEMA };
}

/** eve-world-aws: warm (one World, its in-process consumer) or cold (a fresh World per delivery). */
export async function benchOursSession({ stackEnv, wellKnown, dist, log, turns, cold }) {
  const s = await oursSetup({ stackEnv, dist });
  const app = await loadSessionApp(wellKnown);
  const rec = createRecorder();
  const billing = createBilling(s.schema);
  await instrumentClients(s.clients, rec);
  rec.onEnd = billing.observe;
  // BENCH_SESSION_EARLY=0: the warm World without early delivery (`earlyDelivery: false`), to compare.
  const early = process.env.BENCH_SESSION_EARLY === '0' ? { consumer: { earlyDelivery: false } } : {};
  const world = s.createWorld({ config: s.config, clients: s.clients, ...early });
  const wr = instrumentWorld(world, rec);
  const stamps = [];
  const deliveries = [];
  stampStepNames(world, rec, stamps);
  const fresh = [];
  let handler = timedHandler(app.flow.POST, rec, deliveries);
  if (cold) {
    // A fresh World for every delivery: no run/step item cache, no log tail but what the message
    // carries, a new stream writer. The consumer and flow route stay (they hold no storage state).
    const inner = handler;
    handler = async (req) => {
      const w = s.createWorld({ config: s.config, clients: s.clients });
      stampStepNames(w, rec, stamps);
      const create = w.events.create;
      w.events.create = async function (runId, data, ...rest) {
        const out = await create.call(this, runId, data, ...rest);
        wr.notify(runId ?? out?.run?.runId, data?.eventType);
        return out;
      };
      fresh.push(w);
      app.runtime.setWorld(w);
      return inner(req);
    };
  }
  world.registerHandler('__wkf_workflow_', handler);
  await world.start();
  app.runtime.setWorld(world);
  try {
    await runSession(app, rec, wr, { turns: WARMUP_TURNS, label: 'warm-up', log });
    await settle(rec, wr);
    app.runtime.setWorld(world);
    billing.seed(s.config.tableName, await scanAll(s.observer.ddb, s.config.tableName));
    const session = await runSession(app, rec, wr, {
      turns,
      label: cold ? 'eve-world-aws cold' : 'eve-world-aws',
      log,
    });
    await settle(rec, wr);
    const windows = turnWindows(rec, session, rec.now());
    // BENCH_SESSION_DUMP=20 or =10,20,30: every call of those turns, on stderr.
    for (const n of (process.env.BENCH_SESSION_DUMP ?? '').split(',').filter(Boolean))
      if (windows[Number(n) - 1]) dumpTurn(windows[Number(n) - 1], stamps, deliveries);
    return {
      turns: windows.map((w) => ({
        ...accountTurn(w, billing),
        path: milestones(w, stamps, deliveries),
        calls: attributeCalls(w, deliveries),
      })),
      billingNotes: billing.notes(),
      unbilled: billing.unknown(),
    };
  } finally {
    app.runtime.setWorld(undefined);
    await world.close();
    for (const w of fresh) await w.close();
    s.destroyClients(s.clients);
    s.destroyClients(s.observer);
  }
}

export async function benchLocalSession({ wellKnown, log, turns }) {
  const { createWorld } = await import('@workflow/world-local');
  const pkg = JSON.parse(
    readFileSync(new URL('../node_modules/@workflow/world-local/package.json', import.meta.url), 'utf8'),
  );
  const app = await loadSessionApp(wellKnown);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'eve-bench-session-local-'));
  const rec = createRecorder();
  const world = createWorld({ dataDir });
  const wr = instrumentWorld(world, rec);
  const stamps = [];
  const deliveries = [];
  stampStepNames(world, rec, stamps);
  world.registerHandler('__wkf_workflow_', timedHandler(app.flow.POST, rec, deliveries));
  await world.start();
  app.runtime.setWorld(world);
  try {
    await runSession(app, rec, wr, { turns: WARMUP_TURNS, label: 'warm-up', log });
    await settle(rec, wr);
    const session = await runSession(app, rec, wr, { turns, label: `world-local ${pkg.version}`, log });
    await settle(rec, wr);
    const windows = turnWindows(rec, session, rec.now());
    return {
      version: pkg.version,
      turns: windows.map((w) => ({ turn: w.turn, latencyMs: w.latencyMs, path: milestones(w, stamps, deliveries) })),
    };
  } finally {
    app.runtime.setWorld(undefined);
    await world.close?.();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchSession({ stackEnv, wellKnown, dist, log, turns = 100, local = true, cold = true }) {
  const out = {
    turns,
    chunksPerTurn: CHUNKS,
    warmupTurns: WARMUP_TURNS,
    earlyDelivery: process.env.BENCH_SESSION_EARLY !== '0',
  };
  log('  session: eve-world-aws, warm (one World, in-process consumer)...');
  out.warm = await benchOursSession({ stackEnv, wellKnown, dist, log, turns, cold: false });
  if (cold) {
    log('  session: eve-world-aws, cold (a fresh World per delivery)...');
    out.cold = await benchOursSession({ stackEnv, wellKnown, dist, log, turns, cold: true });
  }
  if (local) {
    log('  session: @workflow/world-local...');
    out.local = await benchLocalSession({ wellKnown, log, turns });
  }
  out.summary = summarize(out);
  return out;
}

// ------------------------------------------------------------------ summaries and tables

const lat = (ts) => ts.map((t) => t.latencyMs);
/** Steady-state turns: all but the first (the first pays the session's first delivery). */
const steady = (ts) => ts.slice(1);
/**
 * The issue's session length: turns 2..30. world-local re-reads its whole log from files on every
 * delivery, so its turns slow down as a session grows and a long window flatters the ratio; both
 * windows are reported.
 */
const SHORT_SESSION = 30;
const early = (ts) => ts.slice(1, SHORT_SESSION);

function summarize(r) {
  const s = {};
  for (const k of ['warm', 'cold', 'local']) {
    if (!r[k]) continue;
    const ts = steady(r[k].turns);
    s[k] = {
      p50: pct(lat(ts), 50),
      p90: pct(lat(ts), 90),
      p99: pct(lat(ts), 99),
      mean: mean(lat(ts)),
      p50Early: pct(lat(early(r[k].turns)), 50),
    };
    if (k !== 'local') {
      s[k].ddbRequestsPerTurn = mean(ts.map((t) => t.ddbRequests));
      s[k].sqsRequestsPerTurn = mean(ts.map((t) => t.sqsRequests));
      s[k].billedWruPerTurn = mean(ts.map((t) => t.billed.total));
      s[k].billedGsiWruPerTurn = mean(ts.map((t) => t.billed.gsi));
      s[k].localWruPerTurn = mean(ts.map((t) => t.localWru));
      s[k].rruPerTurn = mean(ts.map((t) => t.rru));
    }
  }
  if (s.warm && s.local) s.ratioP50 = s.warm.p50 / s.local.p50;
  if (s.warm && s.local) s.ratioP50Early = s.warm.p50Early / s.local.p50Early;
  if (s.cold && s.local) s.coldRatioP50 = s.cold.p50 / s.local.p50;
  if (s.cold && s.local) s.coldRatioP50Early = s.cold.p50Early / s.local.p50Early;
  return s;
}

const SHORT = {
  TransactWriteItems: 'TxW',
  PutItem: 'Put',
  UpdateItem: 'Upd',
  DeleteItem: 'Del',
  GetItem: 'Get',
  Query: 'Q',
  SendMessage: 'Send',
  ReceiveMessage: 'Recv',
  DeleteMessage: 'DelMsg',
  ChangeMessageVisibility: 'ChgVis',
};
const byCommand = (counts) =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${fmt(v, 0)} ${SHORT[k] ?? k}`)
    .join(', ');

const MILESTONES = [
  ['hookReceivedWritten', 'hook_received written (client: getByToken + events.create)'],
  ['messageSent', 'queue message sent (SendMessage returned)'],
  ['deliveryReceived', "the hook's delivery received (long poll returned)"],
  ['handlerEntered', "the hook's delivery: flow handler entered"],
  ['newDeliveryEnded', "the hook's delivery: flow handler returned"],
  ['prevStreamStepCompleted', "previous turn's streaming step_completed written (its stream drained)"],
  ['thinkStepStartedAt', 'step 1 step_started sent (replay done)'],
  ['thinkStepStarted', 'step 1 step_started written'],
  ['thinkStepCompleted', 'step 1 step_completed written'],
  ['replyStepStarted', 'step 2 (streaming) step_started written'],
  ['firstChunkPut', 'first chunk put committed'],
  ['firstChunkRead', 'first chunk read by the client'],
  ['lastChunkPut', 'last chunk put committed'],
  ['lastChunkRead', 'last chunk read by the client (turn latency)'],
  ['replyStepCompleted', 'step 2 step_completed written (after the turn)'],
];

export function printSessionTables(r) {
  if (!r) return;
  const s = r.summary;
  const parts = [];
  const n = (x, d = 1) => fmt(x, d);
  const rows = [];
  for (const [k, name] of [
    ['warm', 'eve-world-aws, warm (one process)'],
    ['cold', 'eve-world-aws, cold (fresh World per delivery)'],
    ['local', `@workflow/world-local ${r.local?.version ?? ''}`],
  ]) {
    if (!s[k]) continue;
    rows.push([
      name,
      r[k].turns.length - 1,
      n(s[k].p50, 0),
      n(s[k].p90, 0),
      n(s[k].p99, 0),
      s.local ? n(s[k].p50 / s.local.p50, 2) : '—',
      n(s[k].p50Early, 0),
      s.local ? n(s[k].p50Early / s.local.p50Early, 2) : '—',
      k === 'local' ? '—' : n(s[k].ddbRequestsPerTurn),
      k === 'local' ? '—' : n(s[k].sqsRequestsPerTurn),
      k === 'local' ? '—' : n(s[k].billedWruPerTurn),
      k === 'local' ? '—' : n(s[k].localWruPerTurn),
    ]);
  }
  parts.push(
    table(
      `Table 8a. Session: ${r.turns} turns through one hook, each a step + a step streaming ${r.chunksPerTurn} chunks; turn latency = resumeHook() -> the turn's last chunk read`,
      [
        'world',
        'turns',
        'p50 ms',
        'p90 ms',
        'p99 ms',
        'p50 / local',
        `p50 ms, turns 2..${SHORT_SESSION}`,
        `/ local, 2..${SHORT_SESSION}`,
        'DDB req/turn',
        'SQS req/turn',
        'billed WRU/turn',
        'DDB Local WRU/turn',
      ],
      rows,
      [
        `Turns 2..${r.turns} (turn 1 pays the session's first delivery; it is in Table 8b); the 2..${SHORT_SESSION} columns are the same session's first turns (world-local slows as its log grows, so the long window flatters the ratio). After ${r.warmupTurns} unmeasured warm-up turns of another session. Early delivery ${r.earlyDelivery === false ? 'off (BENCH_SESSION_EARLY=0)' : 'on (the default)'}. Same process, same compiled workflow; the client sends the next message as soon as the last chunk is read.`,
        'billed WRU = write request units as AWS bills the requests sent (bench/lib/billing.mjs; rules and sources in bench/README.md); DDB Local WRU = what DynamoDB Local reports (ConsumedCapacity).',
      ],
    ),
  );
  const at = (k, i) => r[k]?.turns[i - 1];
  const srows = [];
  for (const k of ['warm', 'cold']) {
    if (!r[k]) continue;
    for (const i of [1, 10, 100].filter((x) => x <= r.turns)) {
      const t = at(k, i);
      srows.push([
        `${k}, turn ${i}`,
        n(t.latencyMs, 0),
        t.ddbRequests,
        t.sqsRequests,
        byCommand(t.counts),
        n(t.billed.total),
        n(t.billed.gsi),
        n(t.localWru),
        n(t.rru),
      ]);
    }
  }
  if (r.local)
    for (const i of [1, 10, 100].filter((x) => x <= r.turns))
      srows.push([`world-local, turn ${i}`, n(at('local', i).latencyMs, 0), '—', '—', '—', '—', '—', '—', '—']);
  parts.push(
    table(
      'Table 8b. Session growth: turn 1, 10 and 100 of one session',
      [
        'turn',
        'latency ms',
        'DDB req',
        'SQS req',
        'requests by command',
        'billed WRU',
        'of which GSI',
        'DDB Local WRU',
        'RRU',
      ],
      srows,
      [
        "warm: one World and its in-process consumer for the whole session. cold: every delivery gets a fresh World (createWorld with the same clients: no run or step item cache, no log tail but what the message carries), as a cold Lambda container would; the reader stays in the client's World.",
        "A turn's requests are those sent from its message to the next message (the previous turn's tail — step_completed, the suspension — falls into the next window when the client is fast).",
      ],
    ),
  );
  const prow = [];
  for (const [key, label] of MILESTONES) {
    const col = (k) => {
      const v = steady(r[k]?.turns ?? [])
        .map((t) => t.path?.[key])
        .filter((x) => x !== undefined);
      return v.length ? `${n(pct(v, 50))} / ${n(pct(v, 90))}` : '—';
    };
    prow.push([label, col('warm'), r.cold ? col('cold') : '—', r.local ? col('local') : '—']);
  }
  const avg = (k, f) => {
    const v = steady(r[k]?.turns ?? [])
      .map((t) => f(t.path ?? {}))
      .filter((x) => x !== undefined);
    return v.length ? n(mean(v), 2) : '—';
  };
  const three = (label, f) => [label, avg('warm', f), r.cold ? avg('cold', f) : '—', r.local ? avg('local', f) : '—'];
  prow.push(
    three("share of turns whose step 1 ran in the previous turn's delivery", (p) =>
      p.ranByPreviousDelivery === undefined ? undefined : p.ranByPreviousDelivery ? 1 : 0,
    ),
  );
  prow.push(three('DynamoDB reads from the message to step 1 start', (p) => p.readsBeforeStep1));
  prow.push(three("DynamoDB reads in the hook's own delivery", (p) => p.newDeliveryReads));
  prow.push(three('stream puts in the turn', (p) => p.streamPuts));
  parts.push(
    table(
      'Table 8c. Critical path of one turn: ms after the message (resumeHook() called) at which each milestone finished, p50 / p90 over turns 2..N',
      ['milestone', 'eve-world-aws warm', 'eve-world-aws cold', 'world-local'],
      prow,
      [
        "Timestamps: SDK middleware on the DynamoDB/SQS clients (lib/meter.mjs), wrappers on events.create (event type, step) and on the registered flow handler (delivery start), the client's stream reader. world-local has no AWS calls: only the World-level milestones.",
      ],
    ),
  );
  console.log(parts.join('\n'));
}

// ------------------------------------------------------------------ standalone

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ROOT = fileURLToPath(new URL('..', import.meta.url));
  const { buildE2eApp } = await import(pathToFileURL(path.join(ROOT, 'test/e2e/build.mjs')).href);
  await buildE2eApp();
  // BENCH_DIST: another build's dist/ (e.g. the code before a change, built into .tmp/).
  const dist = pathToFileURL(srcOutOf(path.resolve(ROOT, process.env.BENCH_DIST ?? 'dist'))).href;
  const { startStack } = await import(stackUrlOf(dist));
  const turns = Number(process.argv.find((a) => a.startsWith('--turns='))?.slice(8) ?? sized(100, 3));
  const runsArg = process.argv.find((a) => a.startsWith('--runs='))?.slice(7);
  const runs = runsArg === undefined ? undefined : Number(runsArg);
  if (runs !== undefined && !(Number.isInteger(runs) && runs >= 1)) {
    console.error(`--runs=${runsArg}: expected a whole number of runs, 1 or more (e.g. --runs=3)`);
    process.exit(2);
  }
  if (!(Number.isInteger(turns) && turns >= 2)) {
    console.error('--turns: expected a whole number of turns, 2 or more (e.g. --turns=100)');
    process.exit(2);
  }
  let sessionRuns;
  let facts;
  if (runs !== undefined) {
    // Interleaved runs (bench/session-runs.mjs): the idle gate comes before anything starts.
    sessionRuns = await import('./session-runs.mjs');
    const maxLoad = Number(process.argv.find((a) => a.startsWith('--max-load='))?.slice(11) ?? 0.5);
    const force = process.argv.includes('--force');
    facts = sessionRuns.machineFacts({ dist, force, maxLoad });
    const why = sessionRuns.notIdle(facts);
    if (why && !force) {
      console.error(`bench/session.mjs: ${why}`);
      process.exit(1);
    }
    if (why) console.error(`bench/session.mjs: measuring anyway (--force): ${why}`);
  }
  const stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 90 });
  try {
    if (sessionRuns) {
      const r = await sessionRuns.benchSessionRuns({
        session: { benchOursSession, benchLocalSession },
        stackEnv: stack.env,
        wellKnown: path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1'),
        dist,
        log: (...a) => console.error(...a),
        turns,
        runs,
        facts,
      });
      sessionRuns.printSessionRuns(r);
      console.error(`saved ${path.relative(ROOT, sessionRuns.saveSessionRuns(r))}`);
      process.exitCode = 0;
    } else {
      const r = await benchSession({
        stackEnv: stack.env,
        wellKnown: path.join(ROOT, 'test/e2e/app/.well-known/workflow/v1'),
        dist,
        log: (...a) => console.error(...a),
        turns,
        local: !process.argv.includes('--skip-local'),
        cold: !process.argv.includes('--skip-cold'),
      });
      printSessionTables(r);
      if (process.env.BENCH_SESSION_JSON) {
        const { writeFileSync } = await import('node:fs');
        writeFileSync(process.env.BENCH_SESSION_JSON, JSON.stringify(r, null, 2));
      }
    }
  } finally {
    await stack.stop();
  }
}
