/**
 * The CLI on a real pseudo-terminal (tmux, its own server socket), 80 and 120 columns wide, with
 * colours on (a TTY, no NO_COLOR), as a user sees it (issue 43):
 * - every command that prints a table (`runs`, `doctor`, `init`, `destroy`, `deployments`,
 *   `redrive`, `redrive --stranded`) fits the width: no line the terminal has to wrap, the screen
 *   is exactly the text the command wrote, every escape sequence it wrote is whole and every colour
 *   it opens on a line is closed on that line (no stray `m` or `22m`), run ids are whole on one
 *   line, workflows show by their short name;
 * - `tail`'s live view keeps its header and the stream's end on an 80×24 screen, and gives
 *   "waiting for" lines of their own, the hook token whole.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../../../src/cli/shared/terminal-text.js';
import { LEGACY_DEPLOYMENT_ID } from '../../../src/deployment/id.js';
import { registerDeployment } from '../../../src/deployment/registry.js';
import { encodePayload, envelopeAttributes } from '../../../src/queue/encoding.js';
import { SqsTransport } from '../../../src/queue/transport.js';
import { BIN, cleanEnv, ROOT } from '../../helpers/cli.js';
import { completeRun, createRun, ev, type OpsFixture, opsFixture, startRun, step } from '../../helpers/runs.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'eve-pty-'));
const socket = path.join(tmp, 'tmux.sock');
let f: OpsFixture;
let forecast: string;
let hooked: string;
let stranded: string;
const TOKEN = 'approval-order-2026-12-01-customer-4711-line-3';

const tmux = (...args: string[]) =>
  execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8', env: cleanEnv() });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Screen {
  /** The screen and its scrollback, one terminal row per entry (a wrapped line is two rows). */
  rows: string[];
  /** The bytes the command wrote to the terminal. */
  raw: string;
}

/**
 * Runs `eve-world-aws <args>` in a fresh `width`×`height` tmux session with colours on. With
 * `until`, the command keeps running: the screen is taken once it matches, then the session ends;
 * else once the command exits.
 */
async function onTerminal(
  name: string,
  args: string[],
  width: number,
  opts: { height?: number; until?: RegExp; ci?: boolean } = {},
): Promise<Screen> {
  const session = `${name}-${width}`;
  const script = path.join(tmp, `${session}.sh`);
  const rawFile = path.join(tmp, `${session}.raw`);
  const env = Object.entries(f.env)
    .map(([k, v]) => `export ${k}='${v.replaceAll("'", "'\\''")}'`)
    .join('\n');
  const cmd = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  // A user's terminal, not a CI job (under CI ink draws only the last frame, at exit), unless `ci`.
  // It waits for `go` (sent once the raw output is being recorded), then signals `done`.
  writeFileSync(
    script,
    `unset NO_COLOR FORCE_COLOR CI CONTINUOUS_INTEGRATION\n${opts.ci ? 'export CI=true\n' : ''}${env}\ncd '${ROOT}'\ntmux -S '${socket}' wait-for ${session}-go\n${cmd}\n` +
      `tmux -S '${socket}' wait-for -S ${session}\nsleep 60\n`,
  );
  tmux('new-session', '-d', '-s', session, '-x', String(width), '-y', String(opts.height ?? 50), `bash ${script}`);
  tmux('pipe-pane', '-o', '-t', session, `cat > '${rawFile}'`);
  tmux('wait-for', '-S', `${session}-go`);
  const capture = () => tmux('capture-pane', '-p', '-S', '-', '-t', session).replace(/\n+$/, '').split('\n');
  let rows: string[];
  if (opts.until) {
    const deadline = Date.now() + 60_000;
    for (;;) {
      rows = capture();
      if (opts.until.test(rows.join('\n'))) break;
      expect(Date.now(), `the screen never showed ${opts.until}:\n${rows.join('\n')}`).toBeLessThan(deadline);
      await sleep(250);
    }
  } else {
    const waited = spawnSync('tmux', ['-S', socket, 'wait-for', session], { timeout: 60_000 });
    expect(waited.status, 'the command did not finish within 60 s').toBe(0);
    rows = capture();
  }
  tmux('kill-session', '-t', session);
  // The recorder ends with the session; wait until its file stops growing.
  let size = -1;
  for (let i = 0; i < 20 && existsSync(rawFile) && statSync(rawFile).size !== size; i++) {
    size = statSync(rawFile).size;
    await sleep(100);
  }
  return { rows, raw: readFileSync(rawFile, 'utf8') };
}

const SGR = /\u001b\[[0-9;]*m/g;
/** Every escape sequence the terminal understands as one: CSI (colours, cursor) and OSC. */
const ESCAPE = /\u001b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\))/g;

/** No escape sequence is cut: removing the whole ones leaves no ESC, and no `[22m`-like debris. */
function escapesWhole(raw: string): void {
  const rest = raw.replace(ESCAPE, '');
  expect(rest, 'a cut escape sequence').not.toContain('\u001b');
  expect(rest).not.toMatch(/\[[0-9;]*m/);
}

/** Every colour opened on a line is closed on it. */
function coloursClosedPerLine(raw: string): void {
  for (const line of raw.split('\n')) {
    let open = 0;
    for (const m of line.matchAll(/\u001b\[([0-9;]*)m/g))
      open = ['', '0', '22', '39', '49'].includes(m[1]) ? Math.max(0, open - 1) : open + 1;
    expect(open, JSON.stringify(line)).toBe(0);
  }
}

/** A table command's output on the terminal: fits, nothing wrapped by the terminal, colours whole. */
function fitsTheTerminal(s: Screen, width: number): string[] {
  escapesWhole(s.raw);
  coloursClosedPerLine(s.raw);
  expect(s.raw, 'colours are on').toMatch(/\u001b\[1m/);
  // The spinner on stderr (same terminal) redraws one line and clears it before the report.
  const written = s.raw
    .replace(/\r\u001b\[2K[^\r\n]*(?=\r\u001b\[2K)/g, '')
    .replace(/\r\u001b\[2K/g, '')
    .replace(SGR, '')
    .replace(/\r/g, '')
    .replace(/\n+$/, '')
    .split('\n')
    .map((l) => l.trimEnd());
  for (const line of written) expect(displayWidth(line), line).toBeLessThanOrEqual(width);
  // The screen is the text as written: the terminal wrapped nothing and drew no debris.
  expect(s.rows.map((l) => l.trimEnd())).toEqual(written);
  return written;
}

beforeAll(async () => {
  f = await opsFixture({}, 'pty');
  forecast = await createRun(f.world, 'workflow//./workflows/forecast//forecastDemo', 1, LEGACY_DEPLOYMENT_ID);
  await startRun(f.world, forecast);
  for (let i = 1; i <= 12; i++)
    await step(f.world, forecast, `step_01KB2Z3Y4X5W6V7T8S9R0Q${String(i).padStart(4, '0')}`, 'fetchForecastForCity', {
      city: 'Lisbon',
      tempC: i,
    });
  for (let i = 1; i <= 4; i++) await f.world.streams.write(forecast, 'default', `chunk ${i} of 4\n`);
  await f.world.streams.close(forecast, 'default');
  await completeRun(f.world, forecast, { ok: true });

  // Without deployment affinity (the default) runs carry the legacy id: `runs` has no Deployment column.
  // Running, waiting for a hook (a long token), a timer and a step: not stranded.
  hooked = await createRun(f.world, 'workflow//./workflows/order//approveOrder', 1, LEGACY_DEPLOYMENT_ID);
  await startRun(f.world, hooked);
  await ev(f.world, hooked, { eventType: 'hook_created', correlationId: 'hook_1', eventData: { token: TOKEN } });
  await ev(f.world, hooked, {
    eventType: 'wait_created',
    correlationId: 'wait_1',
    eventData: { resumeAt: new Date(Date.now() + 86_400_000) },
  });
  await step(
    f.world,
    hooked,
    'step_01KB2Z3Y4X5W6V7T8S9R0QZZZZ',
    'step//./workflows/order//chargeCard',
    undefined,
    false,
  );

  // Running with nothing scheduled: stranded once idle past --older-than.
  stranded = await createRun(f.world, 'workflow//./workflows/digest//sendDailyDigest', 1, LEGACY_DEPLOYMENT_ID);
  await startRun(f.world, stranded);

  // A dead letter for `redrive`, two deployments for `deployments`.
  const dlq = await new SqsTransport(f.context).dlqUrl();
  await f.fixture.clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: dlq,
      MessageBody: encodePayload({ runId: stranded, requestedAt: new Date().toISOString() }),
      MessageAttributes: envelopeAttributes({
        queueName: '__wkf_workflow_workflows/digest//sendDailyDigest',
        messageId: 'msg_01KB2Z3Y4X5W6V7T8S9R0Q1P2N',
        attemptOffset: 3,
        headers: {},
      }),
    }),
  );
  await registerDeployment(f.context, 'build:0123456789abcdef', 'node', Date.now() - 3_600_000);
  await registerDeployment(f.context, 'lambda:eve-world-host-function:12', 'lambda', Date.now());
  await sleep(1500); // the stranded run is idle for over 1 s
}, 120_000);

afterAll(async () => {
  spawnSync('tmux', ['-S', socket, 'kill-server']);
  rmSync(tmp, { recursive: true, force: true });
  await f?.close();
});

const TABLES: Array<[string, string[], (lines: string[], width: number) => void]> = [
  [
    'runs',
    ['runs', '--limit', '5'],
    (lines, width) => {
      const text = lines.join('\n');
      // A table, one row a run: bordered at 120 columns, borderless at 80 (the date wraps under itself).
      expect(lines[0]).toMatch(width >= 120 ? /^┌─/ : /^Run {2,}Workflow {2,}Status {2,}Started {2,}Duration$/);
      for (const id of [forecast, hooked, stranded])
        expect(
          lines.some((l) => l.includes(id)),
          id,
        ).toBe(true);
      for (const name of ['forecastDemo', 'approveOrder', 'sendDailyDigest']) expect(text).toContain(name);
      expect(text).not.toContain('workflow//');
    },
  ],
  [
    'doctor',
    ['doctor'],
    (lines) => {
      const text = lines.join(' ');
      expect(text).toMatch(/\(named by EVE_WORLD_AWS_PREFIX=/);
      expect(text.match(/EVE_WORLD_AWS_PREFIX=/g)).toHaveLength(1);
      expect(text).toMatch(/All \d+ checks passed/);
    },
  ],
  ['init', ['init', '--dry-run'], (lines) => expect(lines.join('\n')).toMatch(/Dry run: all 4 resources present/)],
  [
    'destroy',
    ['destroy'],
    (lines) => {
      expect(lines.join('\n')).toMatch(/KEPT/);
      expect(lines.join('\n')).toMatch(/nothing would be deleted/);
    },
  ],
  [
    'deployments',
    ['deployments'],
    (lines) => {
      for (const id of ['build:0123456789abcdef', 'lambda:eve-world-host-function:12'])
        expect(
          lines.some((l) => l.includes(id)),
          id,
        ).toBe(true);
    },
  ],
  [
    'redrive',
    ['redrive', '--dry-run'],
    (lines) => {
      for (const id of ['msg_01KB2Z3Y4X5W6V7T8S9R0Q1P2N', stranded])
        expect(
          lines.some((l) => l.includes(id)),
          id,
        ).toBe(true);
    },
  ],
  [
    'stranded',
    ['redrive', '--stranded', '--dry-run', '--older-than', '1s'],
    (lines) => {
      for (const id of [hooked, stranded])
        expect(
          lines.some((l) => l.includes(id)),
          id,
        ).toBe(true);
      expect(lines.join('\n')).toContain('sendDailyDigest');
    },
  ],
];

describe.each([80, 120])('on a %i-column terminal, colours on', (width) => {
  it.each(TABLES)(
    '%s: the table fits, ids whole, escape sequences whole, nothing wrapped by the terminal',
    async (name, args, check) => {
      const s = await onTerminal(name, args, width);
      check(fitsTheTerminal(s, width), width);
    },
  );

  it('tail: "waiting for" has lines of its own, the hook token whole', async () => {
    const s = await onTerminal('tail-waiting', ['tail', hooked], width, { height: 24, until: /waiting for/ });
    // The live view is still drawing when the session is killed: the recording may stop inside
    // the last sequence it wrote. That cut is the recorder's, so only the text before it is held.
    escapesWhole(s.raw.replace(/\u001b(\[[0-9;?]*)?$/, ''));
    const status = s.rows.findIndex((l) => l.startsWith('status running'));
    expect(s.rows[status]).not.toContain('waiting');
    expect(s.rows[status + 1]).toMatch(new RegExp(`^waiting for hook ${TOKEN};`));
    expect(s.rows.slice(status + 1, status + 3).join(' ')).toMatch(/wait until .*; step chargeCard \(attempt 1\)/);
    for (const l of s.rows) expect(displayWidth(l)).toBeLessThanOrEqual(width);
  });
});

describe('on an 80×24 terminal', () => {
  it('tail under CI (CI=true): plain lines, not a live view that would show nothing until it exits', async () => {
    const { rows, raw } = await onTerminal('tail-ci', ['tail', forecast], 80, { height: 24, ci: true });
    escapesWhole(raw);
    expect(rows.some((l) => /^run .* · workflow /.test(l))).toBe(false);
    expect(rows.join('\n')).toContain('chunk 4 of 4');
  });

  it('tail: the header stays on screen, the stream ends visible, time and data columns whole', async () => {
    const { rows: screen, raw } = await onTerminal('tail', ['tail', forecast], 80, { height: 24 });
    escapesWhole(raw);
    expect(screen.length).toBeLessThanOrEqual(24);
    expect(screen[0]).toMatch(new RegExp(`^run ${forecast} · workflow `));
    expect(screen[1]).toMatch(/^status completed · started /);
    for (let i = 1; i <= 4; i++) expect(screen).toContain(`  chunk ${i} of 4`);
    const completed = screen.filter((l) => /^\s+\d+ step_completed /.test(l));
    expect(completed.length).toBeGreaterThan(0);
    for (const l of completed) expect(l).toMatch(/ fetchForeca… \d\d:\d\d:\d\d\.\d{3} result=\{"city":"Lis/);
    expect(screen.join('\n')).toMatch(/… \d+ earlier events/);
    expect(screen.join('\n')).not.toContain('following…');
  });
});
