/**
 * The inputs of one delivery: the received copy ({@link InboundMessage}), the flow route it goes to
 * ({@link FlowHandler}), everything the four steps read ({@link DeliveryDeps}, wired once by
 * ./compose.ts), and the one value the steps pass along per copy ({@link Received}, {@link Copy}).
 */
import type { WorldConfig } from '../../config/index.js';
import type { Envelope } from '../../queue/encoding.js';
import type { SqsTransport } from '../../queue/transport.js';
import type { Logger } from '../../telemetry/log.js';
import type { DeploymentFilter } from './affinity.js';
import type { CircuitBreaker } from './breaker.js';
import type { EarlyDeliveries } from './early/verdict-registry.js';
import type { SqsReceipts } from './receipts.js';
import type { Verdict } from './verdict.js';

/** A flow route: the compiled route's `POST`, a registered in-process handler, or `fetch`. */
export type FlowHandler = (req: Request) => Promise<Response>;

/** A received SQS message, normalised from the SDK's `Message` or a Lambda `SQSRecord`. */
export interface InboundMessage {
  sqsMessageId: string;
  receiptHandle: string;
  body: string;
  /** String values of the message attributes. */
  attributes: Record<string, string | undefined>;
  /** SQS ApproximateReceiveCount (1 on first receive). */
  receiveCount: number;
  /** SQS SentTimestamp of this copy (epoch ms), when the receive asked for it. */
  sentAt?: number;
}

/** A received copy as ./pipeline.ts carries it, with what the steps read; not decoded (yet). */
export interface Received {
  msg: InboundMessage;
  deps: DeliveryDeps;
  logger: Logger;
}

/** A received copy decoded to its envelope (./decode.ts): what decide and settle take. */
export interface Copy extends Received {
  envelope: Envelope;
  /** The attempt a dispatch of this receive is (./decode.ts). */
  attempt: number;
  /** This receive handed the request to the flow route (set only by ./pipeline.ts's dispatch). */
  dispatched: boolean;
}

export interface DeliveryDeps {
  config: WorldConfig;
  /** Send side: next hops and replacement copies. */
  transport: SqsTransport;
  receipts: SqsReceipts;
  /** The flow route for a logical queue name and the deployment the message names (`eve.dep`). */
  route(queueName: string, deploymentId?: string): { handler: FlowHandler; url: string };
  /** Signs every delivery: the secret, or where to read it (./compose.ts says which). Unset: this process's key. */
  signingSecret?: string | (() => Promise<string>);
  logger?: Logger;
  /** Aborts an HTTP delivery (shutdown, Lambda deadline); the copy is then released. */
  signal?: AbortSignal;
  /** Visibility (s) the received copy is hidden for, extended while the handler runs (./heartbeat.ts). */
  visibilitySeconds: number;
  /** Pauses consumption during a flow-route outage (./breaker.ts). */
  breaker?: CircuitBreaker;
  /**
   * True when the caller did not take the breaker's permission before receiving (the Lambda
   * handler, whose copies arrive regardless): while the circuit is open a copy is parked without
   * calling the route. The poller gates its receives instead and leaves this unset.
   */
  gateOnBreaker?: boolean;
  /**
   * Logical message ids this consumer is handling right now. Core treats a delivery that carries
   * the message id of a step's inline owner as that owner's crash-redelivery and re-runs the step,
   * so two copies of one message (SQS standard queues occasionally deliver twice) are not handled
   * at the same time here: the second copy is deferred and then replays what the first committed
   * (without a request; across processes the step lease does the same, see ./decide.ts).
   */
  inFlight?: Set<string>;
  /**
   * Messages this consumer delivered before their SQS copy arrived (./early/verdict-registry.ts): a
   * copy of one takes that delivery's verdict instead of being dispatched again.
   */
  early?: EarlyDeliveries<Verdict>;
  /** Deployment affinity (./affinity.ts): another deployment's message is held, never dispatched. */
  affinity?: DeploymentFilter;
  now?: () => number;
}
