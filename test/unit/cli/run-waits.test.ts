/**
 * What a running run waits for, folded from its event log (src/cli/run-waits.ts): hooks until
 * disposed, waits until completed, steps from queued through their attempts until they finish.
 */
import type { Event } from '@workflow/world';
import { describe, expect, it } from 'vitest';
import { RunWaits } from '../../../src/cli/run-waits.js';

const ev = (eventType: string, correlationId: string, eventData?: Record<string, unknown>) =>
  ({
    eventType,
    correlationId,
    eventData,
    runId: 'wrun_1',
    eventId: 'evnt_1',
    createdAt: new Date(),
  }) as unknown as Event;

describe('RunWaits', () => {
  it('tracks hooks, waits and steps until they end', () => {
    const w = new RunWaits();
    w.apply(ev('run_started', ''));
    expect(w.describe()).toEqual([]);
    w.apply(ev('hook_created', 'hook_1', { token: 'approval-42' }));
    w.apply(ev('wait_created', 'wait_1', { resumeAt: new Date('2026-12-02T10:00:00Z') }));
    w.apply(ev('step_created', 'step_1', { stepName: 'step//./workflows/order//charge' }));
    expect(w.describe()).toEqual(['hook approval-42', 'wait until 2026-12-02T10:00:00.000Z', 'step charge (queued)']);
    w.apply(ev('step_started', 'step_1', { attempt: 1 }));
    expect(w.describe()[2]).toBe('step charge (attempt 1)');
    w.apply(ev('step_retrying', 'step_1', { retryAfter: '2026-12-02T10:00:05Z' }));
    expect(w.describe()[2]).toBe('step charge (retrying after attempt 1, at 2026-12-02T10:00:05.000Z)');
    w.apply(ev('step_started', 'step_1', {}));
    expect(w.describe()[2]).toBe('step charge (attempt 2)');
    w.apply(ev('hook_received', 'hook_1', { payload: 1 }));
    expect(w.describe()[0]).toBe('hook approval-42'); // a hook takes many payloads until disposed
    w.apply(ev('step_completed', 'step_1', { result: 1 }));
    w.apply(ev('wait_completed', 'wait_1'));
    w.apply(ev('hook_disposed', 'hook_1'));
    expect(w.describe()).toEqual([]);
  });

  it('a failed step is no longer waited for', () => {
    const w = new RunWaits();
    w.apply(ev('step_created', 'step_1', { stepName: 'add' }));
    w.apply(ev('step_failed', 'step_1', { error: 'x' }));
    expect(w.describe()).toEqual([]);
  });
});
