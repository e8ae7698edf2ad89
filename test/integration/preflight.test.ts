/**
 * The preflight (src/preflight/resources.ts) against the emulators: one check shared by concurrent callers
 * and kept once passed; a failed one asked again (so a resource created meanwhile is found); a
 * queue configured as a URL checked too; and only "does not exist" reported as missing: a throttle
 * (injected by SDK middleware) comes back as the contract's ThrottleError.
 */
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { ThrottleError } from '@workflow/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients, destroyClients } from '../../src/aws/clients.js';
import { loadConfig } from '../../src/config/index.js';
import { createContext } from '../../src/context/world-context.js';
import { MissingResourceError, preflight } from '../../src/preflight/resources.js';
import { createTransport } from '../../src/queue/transport.js';
import { createFixture, type Fixture } from '../helpers/aws.js';

let fx: Fixture;
beforeAll(async () => {
  fx = await createFixture({}, 'pre');
});
afterAll(() => {
  if (fx) destroyClients(fx.clients);
});

/** Commands `clients` sends, by name; `fail(name)` makes that command throw `error` before it is sent. */
function recorder(clients: AwsClients) {
  const sent: string[] = [];
  const failing = new Map<string, unknown>();
  for (const c of [clients.ddb, clients.sqs] as { middlewareStack: { add: (m: never, o: object) => void } }[])
    c.middlewareStack.add(
      ((next: (a: unknown) => unknown, context: { commandName?: string }) => async (args: unknown) => {
        const name = (context.commandName ?? '').replace(/Command$/, '');
        sent.push(name);
        if (failing.has(name)) throw failing.get(name);
        return next(args);
      }) as never,
      { step: 'initialize', name: 'preflightRecorder' },
    );
  return { sent, fail: (name: string, error: unknown) => failing.set(name, error), heal: () => failing.clear() };
}

describe('preflight', () => {
  it('concurrent callers share one check, and a passed check is not repeated', async () => {
    // The first check of this configuration in this process.
    const config = fx.config;
    const clients = createClients(config);
    const rec = recorder(clients);
    try {
      const ctx = createContext(config, clients);
      const transport = createTransport(ctx);
      await Promise.all(Array.from({ length: 5 }, () => preflight(ctx, transport)));
      await preflight(ctx, transport);
      expect(rec.sent.sort()).toEqual(['GetItem', 'GetQueueUrl']);
      // The URL the preflight resolved is the one sends use: no second lookup.
      await transport.queueUrl();
      expect(rec.sent).toHaveLength(2);
    } finally {
      destroyClients(clients);
    }
  });

  it('a failed check is asked again: the queue created after the error is found', async () => {
    const queue = `${fx.config.prefix}-late`;
    const config = loadConfig({ ...fx.env, EVE_WORLD_AWS_QUEUE: queue });
    const ctx = createContext(config, fx.clients);
    const err = await preflight(ctx, createTransport(ctx)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingResourceError);
    expect((err as MissingResourceError).missing).toEqual([
      expect.objectContaining({ resource: 'queue', name: queue, chosenBy: `EVE_WORLD_AWS_QUEUE=${queue}` }),
    ]);
    await fx.clients.sqs.send(new CreateQueueCommand({ QueueName: queue }));
    await expect(preflight(ctx, createTransport(ctx))).resolves.toBeUndefined();
  });

  it('a queue configured as a URL (as the CDK construct sets it) is checked too', async () => {
    const transport = createTransport(createContext(fx.config, fx.clients));
    const good = await transport.queueUrl();
    const wrong = good.replace(/[^/]+$/, `${fx.config.prefix}-gone`);
    const config = loadConfig({ ...fx.env, EVE_WORLD_AWS_QUEUE: wrong });
    const ctx = createContext(config, fx.clients);
    const err = await preflight(ctx, createTransport(ctx)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingResourceError);
    expect((err as Error).message).toContain(
      `the SQS queue ${wrong} does not exist (named by EVE_WORLD_AWS_QUEUE=${wrong}`,
    );
    const right = createContext(loadConfig({ ...fx.env, EVE_WORLD_AWS_QUEUE: good }), fx.clients);
    await expect(preflight(right, createTransport(right))).resolves.toBeUndefined();
  });

  it('a throttle is an outage, not a missing resource: ThrottleError, and the next call asks again', async () => {
    const config = fx.config;
    const clients = createClients(config);
    // With the DLQ: another set of resources than the first test's, so not the check it kept.
    const withDlq = { deadLetterQueue: true };
    const rec = recorder(clients);
    try {
      const ctx = createContext(config, clients);
      rec.fail(
        'GetItem',
        Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } }),
      );
      const err = await preflight(ctx, createTransport(ctx), withDlq).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ThrottleError);
      expect(err).not.toBeInstanceOf(MissingResourceError);
      rec.heal();
      await expect(preflight(ctx, createTransport(ctx), withDlq)).resolves.toBeUndefined();
      expect(rec.sent.filter((n) => n === 'GetItem')).toHaveLength(2);
    } finally {
      destroyClients(clients);
    }
  });
});
