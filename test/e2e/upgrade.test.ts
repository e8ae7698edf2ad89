/**
 * A rolling upgrade, for real (docs/operations.md, "Upgrading and versions"): the previous build
 * (git ref 5dbee8f, built here from the pinned ref: format 1, no stamps) and this build (format 2)
 * as two consumer processes on one table and one queue, each running the compiled e2e workflows
 * through real core. Runs are started on each; the old process is SIGKILLed mid-run (right after it
 * ran a step body), as a rolling deploy stops it. Every run must complete with the right result
 * on the new process, with no event id twice in any log and no step completed twice; a step body
 * runs again only where the killed process was running it.
 *
 * The table starts without a format item, as the previous build's `init` left it: this build
 * accepts it (format 1) and `init` then records format 2 while the runs are being read.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, expect, test } from 'vitest';
import { setWorld } from 'workflow/runtime';
import { createWorld } from '../../src/index.js';
import { readTableFormat } from '../../src/preflight/format-check.js';
import { reconcile } from '../../src/provision/index.js';
import { keys } from '../../src/schema/keys.js';
import { createFixture, type Fixture } from '../helpers/aws.js';
import { spawnBuildChild } from '../helpers/build-child.js';
import { type Build, buildCurrent, buildRef, PREVIOUS_REF, removeBuild } from '../helpers/builds.js';
import { stopChildren } from '../helpers/faults-suite.js';

const RUNS_PER_BUILD = 3;
/** countedSteps(prefix, 3): 3 sequential steps, 4 fanned out (0 + 1 + 2 + 3), a 1 s sleep. */
const EXPECTED = 3 + (0 + 1 + 2 + 3);

/**
 * The new process's liveness backstop, short: a run the SIGKILL strands between a step's
 * completion and the message that continues it (no copy comes back for it) is woken by the
 * backstop, within 2 (B + T) of its last commit (docs/operations.md, "Liveness backstop"): 3 min
 * at the defaults, 14 s here.
 */
const NEW_BACKSTOP = { backstopSeconds: 5, backstopTickSeconds: 2 };
/**
 * How long every run may take after the SIGKILL: the visibility (10 s) until the killed process's
 * copies come back, the watch of a step lease it held (60 s: an older build's lease carries no
 * ttl, so the longest one is watched), the backstop's 2 (B + T) for a stranded run, and as much
 * again for a loaded machine.
 */
const RECOVERY_MS =
  2 * (10_000 + 60_000 + 2 * (NEW_BACKSTOP.backstopSeconds + NEW_BACKSTOP.backstopTickSeconds) * 1000);

const children: ChildProcess[] = [];
const builds: Build[] = [];
let scratch: string | undefined;

afterAll(async () => {
  await stopChildren(children);
  for (const b of builds) removeBuild(b);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`gave up waiting (${limitMs / 1000} s) for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test(`rolling upgrade from ${PREVIOUS_REF}: runs started on the old and the new build, the old one SIGKILLed mid-run, every run completes once`, {
  // Waits on the wall clock for the killed process's runs to be recovered (RECOVERY_MS).
  tags: ['timing'],
  timeout: 420_000,
}, async () => {
  const [previous, current] = await Promise.all([buildRef(PREVIOUS_REF), buildCurrent('upgrade')]);
  builds.push(current);
  // A short visibility, so what the killed process held comes back in seconds.
  const fixture: Fixture = await createFixture(
    { EVE_WORLD_AWS_VISIBILITY_TIMEOUT_SECONDS: '10', EVE_WORLD_AWS_CONCURRENCY: '8' },
    'upg',
  );
  const { config, clients } = fixture;
  // As the previous build's `init` left the table: no format item.
  await clients.ddb.send(new DeleteItemCommand({ TableName: config.tableName, Key: marshall(keys.tableFormat()) }));
  expect((await readTableFormat(clients.ddb, config.tableName)).recorded).toBe(false);

  scratch = mkdtempSync(path.join(tmpdir(), 'eve-upgrade-'));
  const tallyFile = path.join(scratch, 'tally.txt');
  writeFileSync(tallyFile, '');
  const tally = () =>
    readFileSync(tallyFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('\t') as [string, string]);

  // The old process delivers nothing early, so every message of its runs goes through SQS to either
  // process; the new one does (its SQS copies carry the early mark, which the old one honours).
  // Step messages are never delivered early: those of both builds' runs reach both processes.
  const [oldProc, newProc] = await Promise.all([
    spawnBuildChild(previous, fixture.env, tallyFile, children, { consumer: { earlyDelivery: false } }),
    spawnBuildChild(current, fixture.env, tallyFile, children, { tuning: NEW_BACKSTOP }),
  ]);
  const world = createWorld({ config, clients, consumer: { consumer: 'none' } });
  setWorld(world);
  try {
    // Runs started on each build, interleaved, so each consumes the other's messages and items.
    const started: { runId: string; on: 'old' | 'new' }[] = [];
    for (let i = 0; i < RUNS_PER_BUILD; i++) {
      started.push({ runId: await oldProc.start(`old:${i}`, [`old:${i}`, 3]), on: 'old' });
      started.push({ runId: await newProc.start(`new:${i}`, [`new:${i}`, 3]), on: 'new' });
    }

    // The old process is stopped mid-run: right after it ran a step body of a run the new build
    // started (it read format-2 messages and items), while runs are still going.
    await waitUntil(
      `the ${PREVIOUS_REF} process (pid ${oldProc.pid}) runs a step body of a run started on this build`,
      () => tally().some(([key, pid]) => pid === String(oldProc.pid) && key.startsWith('new:')),
      90_000,
    );
    oldProc.proc.kill('SIGKILL');
    const ranOnOld = tally().filter(([, pid]) => pid === String(oldProc.pid));

    // `init` of the new build records the format while the runs go on (additive: no log rewritten).
    const reports = await reconcile(clients, config, 'apply');
    expect(reports.find((r) => r.kind === 'table')).toMatchObject({
      state: 'updated',
      details: expect.arrayContaining([
        'format: no format item: format 1 (written before versioning) -> log 2, records 2, messages 2; oldest reader 1',
      ]),
    });
    expect(await readTableFormat(clients.ddb, config.tableName)).toMatchObject({ recorded: true, minReader: 1 });

    // Every run completes, on the new process alone, with the right result.
    const { getRun } = await import('workflow/api');
    const late = Symbol('late');
    const results = await Promise.all(
      started.map(async ({ runId }) => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<typeof late>((r) => {
          timer = setTimeout(() => r(late), RECOVERY_MS);
        });
        const value = await Promise.race([getRun(runId).returnValue, deadline]);
        clearTimeout(timer);
        return value;
      }),
    );
    if (results.includes(late as never)) {
      // Where each late run stands: its status and the tail of its log (what it waits on).
      const stuck = await Promise.all(
        started
          .filter((_, i) => results[i] === late)
          .map(async ({ runId, on }) => {
            const run = await world.runs.get(runId).catch((e: unknown) => ({ status: String(e) }));
            const events = (await world.events.list({ runId, pagination: { limit: 1000 }, resolveData: 'none' })).data;
            const tail = events.slice(-6).map((e) => `${e.eventType}${e.correlationId ? `(${e.correlationId})` : ''}`);
            return `${on} run ${runId}: ${(run as { status: string }).status}, ${events.length} events, last: ${tail.join(' ')}`;
          }),
      );
      throw new Error(
        `runs did not complete:\n${stuck.join('\n')}\nnew process output:\n${newProc.output().slice(-4000)}`,
      );
    }
    expect(results).toEqual(started.map(() => EXPECTED));

    // Nothing misread or duplicated: no event id twice in any log, and no
    // step completed twice.
    for (const { runId, on } of started) {
      const events = (await world.events.list({ runId, pagination: { limit: 1000 }, resolveData: 'none' })).data;
      const ids = events.map((e) => e.eventId);
      expect(new Set(ids).size, `${on} run ${runId}: ${ids.join(' ')}`).toBe(ids.length);
      const completed = events.filter((e) => e.eventType === 'step_completed').map((e) => e.correlationId);
      expect(new Set(completed).size, `${on} run ${runId} steps completed`).toBe(completed.length);
      expect(completed.length).toBe(3 + 4);
      expect(events.at(-1)?.eventType).toBe('run_completed');
    }

    // Step bodies: each ran, and ran twice only where the killed process had been running it.
    const runs = new Map<string, string[]>();
    for (const [key, pid] of tally()) runs.set(key, [...(runs.get(key) ?? []), pid]);
    expect(runs.size).toBe(started.length * (3 + 4));
    for (const [key, pids] of runs) {
      if (pids.length > 1) expect(pids, `${key} ran again`).toContain(String(oldProc.pid));
    }
    console.log(
      `[upgrade] ${ranOnOld.length} step bodies ran on ${PREVIOUS_REF} before its SIGKILL (${ranOnOld.map(([k]) => k).join(', ')}); ` +
        `${[...runs.values()].filter((p) => p.length > 1).length} ran again after it`,
    );
  } finally {
    setWorld(undefined as never);
    await world.close();
  }
});
