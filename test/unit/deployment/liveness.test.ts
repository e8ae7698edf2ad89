/**
 * Liveness by the heartbeat counter on the observer's own clock (src/deployment/liveness.ts): a
 * counter seen changing is live for one window, unchanged for a window is silent, and `lastSeen`
 * (another host's clock) plays no part; the newest live deployment is chosen newest first, waiting
 * only while a newer one is undecided. Pure: a fake clock.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeartbeatWatch, livenessOf, pickNewestLive } from '../../../src/deployment/liveness.js';
import { DEPLOYMENT_HEARTBEAT_MS, LIVENESS_WINDOW_MS } from '../../../src/deployment/registry.js';

function clock() {
  let t = 1_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('HeartbeatWatch', () => {
  it('live only after a change it saw, for one window; silent after a window without one; unknown before', () => {
    const c = clock();
    const w = new HeartbeatWatch(12_000, c.now);
    expect(w.state('a')).toBe('unknown');
    w.observe([{ id: 'a', beats: 7 }]);
    expect(w.state('a')).toBe('unknown'); // seen once: no evidence either way
    c.advance(5_000);
    w.observe([{ id: 'a', beats: 8 }]);
    expect(w.state('a')).toBe('live');
    c.advance(11_999);
    w.observe([{ id: 'a', beats: 8 }]);
    expect(w.state('a')).toBe('live');
    c.advance(1);
    expect(w.state('a')).toBe('silent'); // a killed process: unchanged for the window
    w.observe([{ id: 'a', beats: 9 }]);
    expect(w.state('a')).toBe('live'); // back (a paused process resumed)
  });

  it('never seen changing: silent once watched for the window, whatever its lastSeen says', () => {
    const c = clock();
    const w = new HeartbeatWatch(12_000, c.now);
    // A lastSeen "from the future" (a skewed writer) changes nothing: only the counter counts.
    w.observe([{ id: 'b', beats: 3, lastSeen: Date.now() + 3_600_000 } as never]);
    c.advance(11_000);
    w.observe([{ id: 'b', beats: 3 }]);
    expect(w.state('b')).toBe('unknown');
    c.advance(1_000);
    expect(w.state('b')).toBe('silent');
    expect(w.watchedMs('b')).toBe(12_000);
  });

  it('a Lambda deployment is live while active (a frozen version counts no beats yet is invocable)', () => {
    const w = new HeartbeatWatch(12_000, clock().now);
    expect(livenessOf({ id: 'lambda:f:3', shape: 'lambda', status: 'active' }, w)).toBe('live');
    expect(livenessOf({ id: 'lambda:f:2', shape: 'lambda', status: 'retired' }, w)).toBe('unknown');
    expect(livenessOf({ id: 'build:x', shape: 'node', status: 'active' }, w)).toBe('unknown');
  });
});

describe('pickNewestLive', () => {
  const node = (id: string) => ({ id, shape: 'node' as const, status: 'active' as const });
  it('takes the newest live; waits while a newer one is undecided; skips silent ones; self counts as live', () => {
    const c = clock();
    const w = new HeartbeatWatch(12_000, c.now);
    const order = [node('new'), node('mid'), node('old')];
    w.observe([
      { id: 'new', beats: 1 },
      { id: 'mid', beats: 1 },
      { id: 'old', beats: 1 },
    ]);
    expect(pickNewestLive(order, w)).toBe('wait');
    c.advance(5_000);
    w.observe([
      { id: 'new', beats: 1 },
      { id: 'mid', beats: 2 },
      { id: 'old', beats: 2 },
    ]);
    expect(pickNewestLive(order, w)).toBe('wait'); // `new` may still beat
    c.advance(7_000);
    w.observe([
      { id: 'new', beats: 1 },
      { id: 'mid', beats: 3 },
      { id: 'old', beats: 3 },
    ]);
    expect(pickNewestLive(order, w)).toEqual({ id: 'mid' }); // `new` is silent: a dead phantom is never chosen
    expect(pickNewestLive(order, w, 'new')).toEqual({ id: 'new' }); // this process is `new`
    c.advance(20_000);
    expect(pickNewestLive(order, w)).toBeUndefined(); // nobody beats any more
  });
});

describe('the bound the docs state (issue 39, item 4)', () => {
  const doc = (f: string) =>
    readFileSync(path.resolve(import.meta.dirname, '..', '..', '..', 'docs', f), 'utf8').replace(/\s+/g, ' ');
  const beat = DEPLOYMENT_HEARTBEAT_MS / 1000;
  const window = LIVENESS_WINDOW_MS / 1000;

  it('a dead consumer is shown within the window: two heartbeats and 2 s, as the code watches', () => {
    expect(LIVENESS_WINDOW_MS).toBe(2 * DEPLOYMENT_HEARTBEAT_MS + 2_000);
    expect(window).toBeLessThanOrEqual(15); // seconds, not minutes
    // A counter last moved just before a kill is silent one window after that move, never later.
    const c = clock();
    const w = new HeartbeatWatch(undefined, c.now);
    expect(w.windowMs).toBe(LIVENESS_WINDOW_MS);
    w.observe([{ id: 'k', beats: 1 }]);
    c.advance(DEPLOYMENT_HEARTBEAT_MS);
    w.observe([{ id: 'k', beats: 2 }]); // its last beat; then it is killed
    c.advance(LIVENESS_WINDOW_MS);
    w.observe([{ id: 'k', beats: 2 }]);
    expect(w.state('k')).toBe('silent');
  });

  it('docs/operations.md and docs/cli.md state the heartbeat and the window the code uses', () => {
    const ops = doc('operations.md');
    expect(ops).toContain(`counts a heartbeat on its deployment's item every ${beat} s`);
    expect(ops).toContain(`a counter unchanged for ${window} s (two heartbeats and 2 s) means no process of it runs`);
    expect(ops).toContain(
      `shown without a live consumer by any of them started after it died, within ${window} s of its start`,
    );
    const cli = doc('cli.md');
    expect(cli).toContain(`the listing takes up to ${window} s when a deployment has no live process`);
    expect(cli).toContain(`watches every deployment's heartbeat (up to ${window} s, as \`deployments\` does)`);
  });
});
