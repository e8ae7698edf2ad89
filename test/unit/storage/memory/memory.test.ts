/** What a storage instance remembers stays within its byte budgets (unit test, no AWS). */
import { expect, it } from 'vitest';
import { SlotHints } from '../../../../src/storage/memory/slot-hints.js';
import { StepItemCache } from '../../../../src/storage/memory/view-items.js';
import type { EventRecord } from '../../../../src/storage/records/event.js';

const ev = (runId: string, slot: number, bytes: number): EventRecord => ({
  runId,
  slot,
  eventType: 'step_completed',
  correlationId: `step_${slot}`,
  eventData: { result: new Uint8Array(bytes) },
  createdAt: new Date(),
});

it('forgets the least recently used runs once remembered events pass 16 MB, never the newest', () => {
  const hints = new SlotHints();
  // 40 runs x 20 events x 30 KB = 24 MB offered.
  for (let r = 0; r < 40; r++) {
    const events = Array.from({ length: 20 }, (_, i) => ev(`run_${r}`, i + 1, 30_000));
    hints.note(`run_${r}`, 20, events);
  }
  expect(hints.recent('run_39', 0, 20)).toHaveLength(20);
  expect(hints.recent('run_0', 0, 20)).toBeUndefined();
  expect(hints.get('run_0')).toBeUndefined();
  const kept = Array.from({ length: 40 }, (_, r) => hints.recent(`run_${r}`, 0, 20)).filter(Boolean).length;
  expect(kept * 20 * 30_000).toBeLessThanOrEqual(16 * 1024 * 1024);
  expect(kept).toBeGreaterThan(20);
});

it('remembers step items up to 8 MB in all, oldest forgotten first', () => {
  const steps = new StepItemCache();
  const item = { PK: { S: 'RUN#r' }, SK: { S: 'STEP#s' }, input: { B: new Uint8Array(60_000) } };
  for (let i = 0; i < 200; i++) steps.remember('run_x', `step_${i}`, item);
  expect(steps.known('run_x', 'step_199')).toBe(item);
  expect(steps.known('run_x', 'step_0')).toBeUndefined();
  const kept = Array.from({ length: 200 }, (_, i) => steps.known('run_x', `step_${i}`)).filter(Boolean).length;
  expect(kept * 60_000).toBeLessThanOrEqual(8 * 1024 * 1024);
  // An item over 64 KB is not remembered at all.
  steps.remember('run_x', 'big', { PK: { S: 'x' }, SK: { S: 'y' }, input: { B: new Uint8Array(70_000) } });
  expect(steps.known('run_x', 'big')).toBeUndefined();
});
