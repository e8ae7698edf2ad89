/**
 * Metrics of the World's own AWS calls, as SDK middleware on the clients `createClients` builds:
 * `Throttles` (a call that still failed throttled after the SDK's retries: the middleware sits at
 * the `initialize` step, outside the retry middleware) and `KmsCalls` (every KMS command sent).
 * Clients passed in by an embedder are left as they are.
 */
import { countMetric } from '../telemetry/metrics.js';
import { isThrottling } from './sdk-errors.js';

interface MiddlewareClient {
  middlewareStack: {
    add(
      mw: (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>,
      opts: { step: 'initialize'; name: string },
    ): void;
  };
}

/** Add the call metrics to `client` (of `service`); returns it. */
export function instrumentClient<C>(client: C, service: 'dynamodb' | 'sqs' | 's3' | 'scheduler' | 'kms' | 'lambda'): C {
  (client as unknown as MiddlewareClient).middlewareStack.add(
    (next) => async (args) => {
      if (service === 'kms') countMetric('KmsCalls');
      try {
        return await next(args);
      } catch (err) {
        if (isThrottling(err)) countMetric('Throttles');
        throw err;
      }
    },
    { step: 'initialize', name: 'eveWorldAwsCallMetrics' },
  );
  return client;
}
