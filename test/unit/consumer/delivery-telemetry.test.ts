/**
 * The metric of a delivery is chosen from its outcome's structured fields (`action`, `reason`,
 * `hold`), never its text (src/consumer/delivery/delivery-telemetry.ts): every reason has its metric, and
 * the `detail` text changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { outcomeMetric } from '../../../src/consumer/delivery/delivery-telemetry.js';
import type { DeliveryOutcome } from '../../../src/consumer/delivery/verdict.js';

const MAX = 5;

describe('outcomeMetric', () => {
  it('maps every reason to its metric', () => {
    const cases: [DeliveryOutcome, number, string][] = [
      [{ action: 'delete', reason: 'ack' }, 1, 'DeliveriesAcked'],
      [{ action: 'delete', reason: 'rescheduled' }, 1, 'DeliveriesDeferred'],
      [{ action: 'delete', reason: 'redelayed' }, 1, 'DeliveriesDeferred'],
      [{ action: 'delete', reason: 'held', hold: 'other-deployment' }, 1, 'DeliveriesHeldForDeployment'],
      [{ action: 'delete', reason: 'held', hold: 'copy-running' }, 1, 'DeliveriesRefusedCopy'],
      [{ action: 'delete', reason: 'parked' }, MAX, 'DeliveriesRetried'],
      [{ action: 'keep', reason: 'deferred' }, 1, 'DeliveriesDeferred'],
      [{ action: 'keep', reason: 'failed' }, 1, 'DeliveriesRetried'],
      [{ action: 'keep', reason: 'failed' }, MAX, 'DeliveriesDeadLettered'],
      [{ action: 'keep', reason: 'malformed' }, MAX, 'DeliveriesDeadLettered'],
      [{ action: 'keep', reason: 'unauthorized' }, MAX - 1, 'DeliveriesRetried'],
      [{ action: 'keep', reason: 'transport' }, MAX, 'DeliveriesRetried'],
      [{ action: 'keep', reason: 'unavailable' }, MAX, 'DeliveriesRetried'],
      [{ action: 'keep', reason: 'released' }, 1, 'DeliveriesRetried'],
    ];
    for (const [outcome, receiveCount, metric] of cases) {
      expect(outcomeMetric(outcome, receiveCount, MAX), JSON.stringify(outcome)).toBe(metric);
    }
  });

  it('reads no text: a detail that names another outcome changes nothing', () => {
    const plain: DeliveryOutcome = { action: 'keep', reason: 'unavailable' };
    const worded: DeliveryOutcome = { ...plain, detail: 'HTTP 500: failed, malformed, dead-lettered, acked' };
    expect(outcomeMetric(worded, MAX, MAX)).toBe(outcomeMetric(plain, MAX, MAX));
  });
});
