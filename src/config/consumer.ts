/**
 * The consumer's options (`createWorld({ consumer })`, `CreateConsumerOptions` in
 * src/consumer/index.ts), not variables: one row each, whose default (and, for `waitTimeSeconds`,
 * range) the consumer reads (catalogue.ts). (Its `logger` and `onDeliveryOutcome` are callbacks,
 * not settings.)
 */
import { option, rangedOption } from './setting.js';

export const CONSUMER_OPTIONS = {
  consumer: option({
    name: 'consumer',
    unset: '`none` inside AWS Lambda (`AWS_LAMBDA_FUNCTION_NAME` set), else `poll`',
    values: '`poll` / `none`',
    description:
      '`poll`: `start()` runs the in-process SQS consumer. `none`: `start()` does nothing (a Lambda, where the SQS event source mapping consumes).',
  }),
  waitTimeSeconds: rangedOption({
    name: 'waitTimeSeconds',
    default: 5,
    // SQS: a ReceiveMessage waits 0-20 s.
    min: 0,
    max: 20,
    unit: 's',
    description: 'Long-poll wait of the in-process consumer; `close()` waits for the poll in flight.',
  }),
  drainTimeoutMs: option({
    name: 'drainTimeoutMs',
    default: 30_000,
    values: 'ms',
    description: 'How long `close()` waits for running deliveries before it aborts and releases them.',
  }),
  breakerCooldownMs: option({
    name: 'breakerCooldownMs',
    default: 5000,
    values: 'ms',
    description:
      'Cool-down of the circuit breaker in front of the flow route after it trips, doubling on each further trip up to 60 s.',
  }),
  earlyDelivery: option({
    name: 'earlyDelivery',
    default: true,
    values: '`true` / `false`',
    description:
      'Early delivery: a message this World sends while its in-process consumer polls, to a queue with a handler registered in process, is delivered at once beside its SQS send (step executions excepted). `false`: every message waits for its SQS copy.',
  }),
} as const;
