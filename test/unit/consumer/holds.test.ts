/**
 * The holds of a copy the consumer does not dispatch, each a tuning option (src/config/tuning.ts),
 * and their one jitter (src/util/jitter.ts): the defaults are the values the consumer always used,
 * a tuned value is the one the decide step (src/consumer/delivery/decide.ts), the affinity filter
 * (src/consumer/delivery/affinity.ts) and the park (src/consumer/delivery/replace.ts) apply, and the jitter
 * stays within [base, base + ceil(base / 2)].
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type WorldTuning } from '../../../src/config/index.js';
import { createDeploymentFilter } from '../../../src/consumer/delivery/affinity.js';
import { decide } from '../../../src/consumer/delivery/decide.js';
import type { DeliveryDeps, InboundMessage } from '../../../src/consumer/delivery/deps.js';
import { park } from '../../../src/consumer/delivery/replace.js';
import type { WorldContext } from '../../../src/context/world-context.js';
import type { Envelope } from '../../../src/queue/encoding.js';
import type { Logger } from '../../../src/telemetry/log.js';
import { jittered } from '../../../src/util/jitter.js';

const logger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;
const msg: InboundMessage = { sqsMessageId: 's1', receiptHandle: 'r1', body: '', attributes: {}, receiveCount: 1 };
const envelope = (deploymentId?: string): Envelope => ({
  queueName: '__wkf_workflow_x',
  messageId: 'msg_1',
  attemptOffset: 0,
  body: '{}',
  deploymentId,
});

/** The seconds of `count` holds in a row of one message of this process's retired deployment. */
async function retiredHolds(tuning: Partial<WorldTuning>, random: () => number, count: number): Promise<number[]> {
  const ctx = { config: loadConfig({}, tuning) } as WorldContext;
  const filter = createDeploymentFilter(
    ctx,
    { affinity: true, shape: 'node', retired: true, id: async () => 'dpl_a', fingerprint: async () => ({}) },
    random,
  );
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const hold = await filter.holdFor(envelope('dpl_a'));
    expect(hold?.cause).toBe('other-deployment');
    out.push(hold?.seconds as number);
  }
  return out;
}

describe('jittered', () => {
  it('is a whole number in [base, base + ceil(base / 2)], reaching both ends', () => {
    for (let base = 1; base <= 200; base++) {
      const top = base + Math.ceil(base / 2);
      expect(jittered(base, () => 0)).toBe(base);
      expect(jittered(base, () => 1 - 2 ** -52)).toBe(top);
      for (let i = 0; i < 20; i++) {
        const s = jittered(base);
        expect(Number.isInteger(s)).toBe(true);
        expect(s).toBeGreaterThanOrEqual(base);
        expect(s).toBeLessThanOrEqual(top);
      }
    }
  });
});

describe('the holds as tuning options', () => {
  it('default to the values the consumer always used', () => {
    const c = loadConfig({});
    expect({
      copyRunningHoldSeconds: c.copyRunningHoldSeconds,
      deploymentHoldMaxSeconds: c.deploymentHoldMaxSeconds,
      retiredHoldMaxSeconds: c.retiredHoldMaxSeconds,
      registryUnreadableHoldSeconds: c.registryUnreadableHoldSeconds,
      dependencyParkSeconds: c.dependencyParkSeconds,
    }).toEqual({
      copyRunningHoldSeconds: 5,
      deploymentHoldMaxSeconds: 60,
      retiredHoldMaxSeconds: 8,
      registryUnreadableHoldSeconds: 5,
      dependencyParkSeconds: 15,
    });
  });

  it('are validated: a hold out of range is a ConfigError naming the option and an example', () => {
    for (const [option, bad] of [
      ['deploymentHoldMaxSeconds', 601],
      ['copyRunningHoldSeconds', 0],
      ['dependencyParkSeconds', 1.5],
    ] as const) {
      let err: unknown;
      try {
        loadConfig({}, { [option]: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(`tuning.${option}`);
      expect((err as Error).message).toMatch(/Example: \{ tuning: /);
    }
  });

  it('a copy of a message being delivered in this process is held for copyRunningHoldSeconds', async () => {
    for (const [tuning, seconds] of [
      [{}, 5],
      [{ copyRunningHoldSeconds: 11 }, 11],
    ] as const) {
      const deps = { config: loadConfig({}, tuning), inFlight: new Set(['msg_1']) } as unknown as DeliveryDeps;
      const decision = await decide({ msg, envelope: envelope(), attempt: 1, deps, logger, dispatched: false });
      expect(decision).toMatchObject({ kind: 'settle', verdict: { kind: 'hold', seconds, cause: 'copy-running' } });
    }
  });

  it("a retired deployment's own message backs off 1 s doubling up to retiredHoldMaxSeconds, with jitter", async () => {
    // No jitter drawn (random 0): the bases themselves.
    expect(await retiredHolds({}, () => 0, 6)).toEqual([1, 2, 4, 8, 8, 8]);
    expect(await retiredHolds({ retiredHoldMaxSeconds: 3 }, () => 0, 5)).toEqual([1, 2, 3, 3, 3]);
    // The most jitter: up to half of the base again, never past the tuned cap's range.
    expect(await retiredHolds({ retiredHoldMaxSeconds: 3 }, () => 1 - 2 ** -52, 5)).toEqual([2, 3, 5, 5, 5]);
  });

  it('a copy whose request could not be built for a failing dependency is parked for dependencyParkSeconds, with jitter', async () => {
    for (const [tuning, base] of [
      [{}, 15],
      [{ dependencyParkSeconds: 4 }, 4],
    ] as const) {
      const waits: number[] = [];
      const deps = {
        config: loadConfig({}, tuning),
        transport: {
          send: async (_e: Envelope, seconds: number) => {
            waits.push(seconds);
          },
        },
      } as unknown as DeliveryDeps;
      for (let i = 0; i < 30; i++) {
        const copy = { msg, envelope: envelope(), attempt: 1, deps, logger, dispatched: false };
        const outcome = await park(copy, 'unavailable', 'S3 down', { reached: false, dependency: true });
        expect(outcome).toMatchObject({ action: 'delete', reason: 'parked' });
      }
      expect(waits).toHaveLength(30);
      for (const w of waits) {
        expect(w).toBeGreaterThanOrEqual(base);
        expect(w).toBeLessThanOrEqual(base + Math.ceil(base / 2));
      }
    }
  });
});
