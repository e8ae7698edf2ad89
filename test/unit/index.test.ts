/**
 * How `createWorld()` is put together: the optional contract members it implements are wired
 * (listed here, so adding or dropping one is a visible change), and the public entry exports
 * what a caller needs. Building a World opens no connection, so this needs no emulator.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import * as entry from '../../src/index.js';
import { consoleLogger } from '../../src/telemetry/log.js';

const world = entry.createWorld({ config: loadConfig({ AWS_REGION: 'us-east-1' }), consumer: { consumer: 'none' } });
afterAll(() => world.close());

/** Optional members of `World` (see @workflow/world interfaces.d.ts), as paths. */
const OPTIONAL = [
  'queueBatch',
  'start',
  'close',
  'capabilities',
  'streamFlushIntervalMs',
  'getRuntimeDeadline',
  'resolveLatestDeploymentId',
  'getEncryptionKeyForRun',
  'createRunId',
  'getEnvironment',
  'describeRun',
  'analytics',
  'runs.getMany',
  'runs.waitForTerminalStatus',
  'runs.experimentalSetAttributes',
  'runs.cancelMany',
  'events.createBatch',
  'streams.writeMulti',
  'streams.createWriteSession',
] as const;

const at = (path: string): unknown =>
  path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], world);

describe('createWorld', () => {
  it('wires every optional member it implements', () => {
    const wired = OPTIONAL.filter((p) => at(p) !== undefined);
    expect(wired).toEqual([
      'queueBatch',
      'start',
      'close',
      'capabilities',
      'streamFlushIntervalMs',
      'resolveLatestDeploymentId',
      'runs.getMany',
      'runs.waitForTerminalStatus',
      'streams.writeMulti',
      'streams.createWriteSession',
    ]);
    for (const p of wired.filter((x) => x !== 'capabilities' && x !== 'streamFlushIntervalMs'))
      expect(typeof at(p), p).toBe('function');
    // 0 = core sends a chunk after quiet at once; bursts are grouped by the write session's pacing.
    expect(world.streamFlushIntervalMs).toBe(0);
    expect(world.capabilities).toEqual({ hookResumeDedup: true, hookRetention: { active: true } });
  });

  it('exposes the contract and its own operations, never its parts (no context, clients or key source)', () => {
    expect(Object.keys(world).sort()).toEqual(
      [
        'specVersion',
        'capabilities',
        'runs',
        'steps',
        'events',
        'hooks',
        'getDeploymentId',
        'isDeploymentUnavailableError',
        'resolveLatestDeploymentId',
        'queue',
        'queueBatch',
        'createQueueHandler',
        'registerHandler',
        'streams',
        'streamFlushIntervalMs',
        'sweepOrphans',
        'start',
        'close',
      ].sort(),
    );
  });

  it('takes tuning options over its config, validated like the variables', async () => {
    const tuned = entry.createWorld({
      config: loadConfig({ AWS_REGION: 'us-east-1' }),
      tuning: { streamFlushMs: 25 },
      consumer: { consumer: 'none' },
    });
    expect(tuned.streamFlushIntervalMs).toBe(25);
    await tuned.close();
    expect(() => entry.createWorld({ config: loadConfig({}), tuning: { streamBurstMs: -1 } })).toThrow(
      /^tuning\.streamBurstMs must be a whole number/,
    );
  });

  it('queueBatch is the real implementation: a bad queue name is reported per entry, not thrown', async () => {
    await expect(world.queueBatch?.('nope' as never, [{ message: { runId: 'r' } as never }])).resolves.toEqual([
      { messageId: null, error: 'Error: Invalid queue name: nope', retryable: true },
    ]);
  });

  it('names a set EVE_WORLD_AWS_* variable it does not read once per process, with the closest known name', async () => {
    const typo = ['EVE', 'WORLD', 'AWS', 'PREFX'].join('_');
    const warned: string[] = [];
    const logger = { ...consoleLogger, warn: (m: string) => warned.push(m) };
    const make = () =>
      entry.createWorld({
        config: loadConfig({ AWS_REGION: 'us-east-1', [typo]: 'shop' }),
        consumer: { consumer: 'none', logger },
      });
    const worlds = [make(), make()];
    expect(warned).toEqual([expect.stringContaining(`${typo} is set but is not a variable of this World`)]);
    expect(warned[0]).toContain('Did you mean EVE_WORLD_AWS_PREFIX?');
    await Promise.all(worlds.map((w) => w.close()));
  });

  it('exports the public types and errors a caller needs', () => {
    expect(typeof entry.createWorld).toBe('function');
    expect(entry.default).toBe(entry.createWorld);
    expect(new entry.ConfigError('X', 'is bad', '1')).toBeInstanceOf(Error);
    expect(Array.isArray(entry.ENV_DOCS)).toBe(true);
    expect(typeof entry.loadConfig).toBe('function');
  });
});
