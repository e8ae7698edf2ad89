/**
 * The CLI on a real pseudo-terminal of 80×24 (tmux, its own server socket): `tail`'s live view of
 * a run taller than the screen keeps its header and the stream's end visible and every column
 * inside 80, and the `runs` table fits the width instead of wrapping.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../../helpers/cli.js';
import { completeRun, createRun, type OpsFixture, opsFixture, startRun, step } from '../../helpers/runs.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'eve-pty-'));
const socket = path.join(tmp, 'tmux.sock');
let f: OpsFixture;
let runId: string;

const tmux = (...args: string[]) => execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8' });

/** Runs `eve-world-aws <args>` in a fresh 80×24 tmux session and returns the screen once it exits. */
function onTerminal(name: string, args: string[]): string[] {
  const script = path.join(tmp, `${name}.sh`);
  const env = Object.entries({ ...f.env, NO_COLOR: '1' })
    .map(([k, v]) => `export ${k}='${v.replaceAll("'", "'\\''")}'`)
    .join('\n');
  const cmd = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  // The shell signals `done` after the command; nothing else is printed, so the screen is its own.
  writeFileSync(script, `${env}\ncd '${ROOT}'\n${cmd}\ntmux -S '${socket}' wait-for -S ${name}\nsleep 60\n`);
  tmux('new-session', '-d', '-s', name, '-x', '80', '-y', '24', `bash ${script}`);
  const waited = spawnSync('tmux', ['-S', socket, 'wait-for', name], { timeout: 60_000 });
  expect(waited.status, 'the command did not finish within 60 s').toBe(0);
  const screen = tmux('capture-pane', '-p', '-t', name);
  tmux('kill-session', '-t', name);
  return screen.replace(/\n+$/, '').split('\n');
}

beforeAll(async () => {
  f = await opsFixture({}, 'pty');
  runId = await createRun(f.world, 'workflow//./workflows/forecast//forecastDemo');
  await startRun(f.world, runId);
  for (let i = 1; i <= 12; i++)
    await step(f.world, runId, `step_01KB2Z3Y4X5W6V7T8S9R0Q${String(i).padStart(4, '0')}`, 'fetchForecastForCity', {
      city: 'Lisbon',
      tempC: i,
    });
  for (let i = 1; i <= 4; i++) await f.world.streams.write(runId, 'default', `chunk ${i} of 4\n`);
  await f.world.streams.close(runId, 'default');
  await completeRun(f.world, runId, { ok: true });
}, 120_000);

afterAll(async () => {
  spawnSync('tmux', ['-S', socket, 'kill-server']);
  rmSync(tmp, { recursive: true, force: true });
  await f?.close();
});

describe('on an 80×24 terminal', () => {
  it('tail: the header stays on screen, the stream ends visible, time and data columns whole', () => {
    const screen = onTerminal('tail', ['tail', runId]);
    expect(screen.length).toBeLessThanOrEqual(24);
    expect(screen[0]).toMatch(new RegExp(`^run ${runId} · workflow `));
    expect(screen[1]).toMatch(/^status completed · started /);
    for (let i = 1; i <= 4; i++) expect(screen).toContain(`  chunk ${i} of 4`);
    const completed = screen.filter((l) => /^\s+\d+ step_completed /.test(l));
    expect(completed.length).toBeGreaterThan(0);
    for (const l of completed) expect(l).toMatch(/ fetchForeca… \d\d:\d\d:\d\d\.\d{3} result=\{"city":"Lis/);
    expect(screen.join('\n')).toMatch(/… \d+ earlier events/);
    expect(screen.join('\n')).not.toContain('following…');
  });

  it('runs: the table fits 80 columns (every line a table line, nothing wrapped by the terminal)', () => {
    const screen = onTerminal('runs', ['runs', '--limit', '3']);
    const table = screen.filter((l) => l.trim() !== '');
    expect(table[0]).toMatch(/^┌/);
    for (const l of table) expect(l).toMatch(/^[┌│├└].*[┐│┤┘]$/);
    // The run id wraps inside its column: its pieces, top to bottom, are the whole id.
    const firstColumn = table
      .filter((l) => l.startsWith('│'))
      .map((l) => l.split('│')[1].trim())
      .join('');
    expect(firstColumn).toContain(runId);
  });
});
