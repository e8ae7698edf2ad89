/**
 * Fault injection (SDK middleware; the calls themselves are real): transactions cancelled by
 * contention and throttled requests are retried, and the log stays dense; throttling that
 * outlasts the SDK's retries is the contract's ThrottleError, and nothing is written.
 */
import { ThrottleError } from '@workflow/errors';
import { slotToEventId } from '@workflow/world';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClients, destroyClients } from '../../../src/aws/clients.js';
import { createContext } from '../../../src/context/world-context.js';
import { createStorage } from '../../../src/storage/index.js';
import { bytes, type StorageFixture, startedRun, storageFixture, sv } from '../../helpers/storage.js';

let f: StorageFixture;
let faulty: ReturnType<typeof createClients>;
/** Faults to inject into the next TransactWriteItems calls, in order. */
const pending: Array<'conflict' | 'throttle' | 'throttle-final'> = [];
let sent = 0;

beforeAll(async () => {
  f = await storageFixture();
  faulty = createClients(f.config);
  const stack = faulty.ddb.middlewareStack as any;
  // Before the retry middleware: a cancelled transaction surfaces to the storage's own retry.
  stack.add(
    (next: any, context: any) => async (args: any) => {
      if (context.commandName === 'TransactWriteItemsCommand' && pending[0] === 'throttle-final') {
        // What the SDK throws once its own retries are spent.
        pending.shift();
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
          name: 'ThrottlingException',
          $metadata: { httpStatusCode: 400, attempts: 8 },
        });
      }
      if (context.commandName === 'TransactWriteItemsCommand' && pending[0] === 'conflict') {
        pending.shift();
        const e = Object.assign(new Error('Transaction cancelled'), {
          name: 'TransactionCanceledException',
          CancellationReasons: args.input.TransactItems.map((_: unknown, i: number) => ({
            Code: i === 0 ? 'TransactionConflict' : 'None',
          })),
        });
        throw e;
      }
      return next(args);
    },
    { step: 'initialize', name: 'injectConflict' },
  );
  // After the retry middleware (deserialize runs inside the retry loop): the SDK retries it.
  stack.add(
    (next: any, context: any) => async (args: any) => {
      if (context.commandName === 'TransactWriteItemsCommand') {
        sent++;
        if (pending[0] === 'throttle') {
          pending.shift();
          throw Object.assign(new Error('Rate exceeded'), {
            name: 'ThrottlingException',
            $metadata: { httpStatusCode: 400 },
          });
        }
      }
      return next(args);
    },
    { step: 'deserialize', name: 'injectThrottle' },
  );
});
afterAll(() => {
  destroyClients(faulty);
  f?.close();
});

it('retries contention cancellations and throttling; no slot is burned or duplicated', async () => {
  const storage = createStorage(createContext(f.config, faulty));
  const runId = await startedRun(storage);
  pending.push('conflict', 'conflict', 'throttle', 'throttle');
  sent = 0;
  const r = await storage.events.create(runId, {
    eventType: 'step_created',
    specVersion: sv,
    correlationId: 'step_1',
    eventData: { stepName: 's', input: bytes('i') },
  });
  expect(r.event?.eventId).toBe(slotToEventId(3));
  expect(pending).toEqual([]);
  expect(sent).toBe(3); // two throttled sends retried by the SDK, then the commit
  const log = await f.storage.events.list({ runId });
  expect(log.data.map((e) => e.eventId)).toEqual([1, 2, 3].map(slotToEventId));
});

it('throttling that outlasts the SDK retries is ThrottleError (retryAfter), and burns no slot', async () => {
  const storage = createStorage(createContext(f.config, faulty));
  const runId = await startedRun(storage);
  pending.push('throttle-final');
  const err = await storage.events
    .create(runId, {
      eventType: 'step_created',
      specVersion: sv,
      correlationId: 'step_t',
      eventData: { stepName: 's', input: bytes('i') },
    })
    .catch((e) => e);
  expect(err.name).toBe('ThrottleError');
  expect(ThrottleError.is(err)).toBe(true);
  expect(err.retryAfter).toBeGreaterThan(0);
  expect(pending).toEqual([]);
  // Nothing was written: the retry lands on the next slot and the log stays dense.
  const r = await storage.events.create(runId, {
    eventType: 'step_created',
    specVersion: sv,
    correlationId: 'step_t',
    eventData: { stepName: 's', input: bytes('i') },
  });
  expect(r.event?.eventId).toBe(slotToEventId(3));
  const log = await f.storage.events.list({ runId });
  expect(log.data.map((e) => e.eventId)).toEqual([1, 2, 3].map(slotToEventId));
});
