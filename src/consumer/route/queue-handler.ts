/**
 * `createQueueHandler(prefix, handler)`: the HTTP side of a delivery (the flow route).
 *
 * Request: POST, typed-JSON body, headers `x-vqs-queue-name` (must start with `prefix`),
 * `x-vqs-message-id`, `x-vqs-message-attempt` (1-based), plus `x-eve-timestamp`/`x-eve-signature`;
 * `x-eve-message-id` on an early delivery: the id `queue()` returned, which its log lines carry as
 * `messageId` (`deliveryId` is then the id core sees, src/queue/delivery-id.ts).
 *
 * Who is accepted (closed by default; see src/consumer/shared/signing.ts):
 * - secrets configured: requests signed with any of them, each signature once (durable nonce);
 * - no secret: only requests signed with this process's random key, i.e. from a consumer in the
 *   same process (loopback / in-process development); an unsigned request from anywhere is refused;
 * - `allowUnsigned` (EVE_WORLD_AWS_ALLOW_UNSIGNED=1, private networks only) and no secret:
 *   anything.
 *
 * Responses:
 * - 401 unsigned, forged, stale or replayed request; the handler never runs.
 * - 400 missing headers, unhandled queue, empty or malformed body; the handler never runs.
 * - 200 `{"timeoutSeconds":N}` the handler asked for redelivery after N seconds (not an ack).
 * - 200 `{"result":...}` for `invoke: true` payloads; 200 `{"ok":true}` otherwise (ack).
 * - 500 `{"error":"Internal error"}` when the handler threw (redelivered later, counted toward the
 *   DLQ). The caller never sees internal detail; it is logged here instead.
 * - 503 `{"error":"Service unavailable"}` when the signing-secret source or the replay guard could
 *   not answer: an outage, which the consumer parks without counting it against the message.
 *
 * The step lease (src/storage/write/step-lease.ts): with `stepLease`, each request gets a random
 * token in its delivery scope; every `step_started` core writes inside it stamps the step with it.
 * While the handler runs, the leases are kept, then released (./step-lease-keeper.ts). The body is
 * read bounded in size and time (./request-body.ts).
 */
import { randomUUID } from 'node:crypto';
import { type MessageId, type Queue, type QueuePrefix, ValidQueueName } from '@workflow/world';
import { type DeliveryScope, decodeLogTail, runInDelivery, type StepLease } from '../../context/delivery-scope.js';
import { decodePayload } from '../../queue/encoding.js';
import { decodeHeaderValue } from '../../queue/header-values.js';
import { type LogFields, withLogContext } from '../../telemetry/log.js';
import { TRACEPARENT_HEADER, withRemoteParent } from '../../telemetry/tracing.js';
import { describeWithStack } from '../shared/error-text.js';
import type { SigningSecretSource } from '../shared/secret-source.js';
import {
  checkSignatureHeaders,
  LOG_TAIL_HEADER,
  MESSAGE_ID_HEADER,
  type NonceStore,
  processSigningKey,
  ReplayGuard,
  SIGNATURE_TOLERANCE_SECONDS,
  verifySignature,
} from '../shared/signing.js';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_READ_TIMEOUT_MS, readBody } from './request-body.js';
import { keepStepLeases, type StepLeasePort } from './step-lease-keeper.js';

export type QueueMessageHandler = Parameters<Queue['createQueueHandler']>[1];

export interface HandlerOptions {
  /** Accepted secrets (rotation: any of them). Empty or absent: only this process's own key. */
  signingSecrets?: readonly string[];
  /**
   * Secrets from Secrets Manager (EVE_WORLD_AWS_SIGNING_SECRET_ARN, ../shared/secret-source.ts),
   * used instead of `signingSecrets`; re-read once when a signature does not verify (rotation).
   */
  secretSource?: SigningSecretSource;
  /** With no secret: accept unsigned requests too (EVE_WORLD_AWS_ALLOW_UNSIGNED=1). */
  allowUnsigned?: boolean;
  /**
   * Also check a signature against the first `x-forwarded-host`
   * (EVE_WORLD_AWS_TRUST_FORWARDED_HOST=1, behind a proxy that sets it). Default: only `Host` and
   * the request URL (../shared/signing.ts).
   */
  trustForwardedHost?: boolean;
  /**
   * This process's published Lambda version, `lambda:<function>:<version>`: a delivery signed for
   * it (by Invoke, ../delivery/invoke.ts) is accepted. Absent outside Lambda and on `$LATEST`.
   */
  lambdaSelf?: string;
  /** Replay guard for configured secrets. Default: per process (use a durable one across instances). */
  nonces?: NonceStore;
  /** Where internal failures are logged (never sent to the caller). Default: console.error. */
  logError?: (message: string, fields?: LogFields) => void;
  /** Lease the steps each delivery starts (src/storage/write/step-lease.ts). Absent: starts are not leased. */
  stepLease?: StepLeasePort;
  /**
   * Told, without waiting, when a run continuation (a body with `runId` and no `stepId`) returned
   * normally: the run and the highest slot of its log the delivery read (the liveness backstop's
   * acknowledgement, src/storage/write/due-moves.ts). Must not throw.
   */
  onTurnDone?: (runId: string, readSlot: number, queueName: string) => void;
  /** Largest request body read (bytes); larger ones get 413. Default 32 MiB. */
  maxBodyBytes?: number;
  /** How long reading the body may take (ms) before the request gets 408. Default 30 000. */
  readTimeoutMs?: number;
  now?: () => number;
}

const json = (value: unknown, status = 200) => Response.json(value, { status });

export function createQueueHandler(
  prefix: QueuePrefix | string,
  handler: QueueMessageHandler,
  opts: HandlerOptions = {},
): (req: Request) => Promise<Response> {
  const secrets = opts.signingSecrets ?? [];
  const source = opts.secretSource;
  const shared = secrets.length > 0 || source !== undefined;
  // Unsigned requests are accepted only on the explicit opt-out, and only when no secret is set.
  const acceptUnsigned = !shared && opts.allowUnsigned === true;
  const keys = secrets.length > 0 ? secrets : [processSigningKey()];
  // Configured secrets are shared by every instance, so their replays are refused durably. Requests
  // signed with the process key are verified only here: an in-memory guard sees them all.
  const replay = shared && opts.nonces ? opts.nonces : new ReplayGuard();
  const logError = opts.logError ?? ((m: string, _fields?: LogFields) => console.error(m));
  const now = opts.now ?? Date.now;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const readTimeoutMs = opts.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS;
  const trust = opts.trustForwardedHost === true;
  // One answer for every refusal: the reason (which would tell a prober that a captured
  // signature is genuine, say) is only logged.
  const unauthorized = (req: Request, reason: string) => {
    logError(
      `[eve-world-aws] flow route refused a request (401, ${reason}): message ${describeHeader(req, 'x-vqs-message-id')} on ${describeHeader(req, 'x-vqs-queue-name')}`,
    );
    return json({ error: 'Unauthorized' }, 401);
  };

  return async (req) => {
    // Nothing is read before the request shows it could be trusted: a signature and a fresh
    // timestamp (the HMAC itself needs the body).
    if (!acceptUnsigned) {
      const pre = checkSignatureHeaders(req.headers, now());
      if (!pre.ok) return unauthorized(req, pre.reason);
    }
    const read = await readBody(req, maxBodyBytes, readTimeoutMs);
    if (!read.ok) return json({ error: read.error }, read.status);
    const bytes = read.bytes;
    if (!acceptUnsigned) {
      let accepted: readonly string[] = keys;
      if (source) {
        try {
          accepted = await source.accepted();
        } catch (err) {
          logError(
            `[eve-world-aws] flow route: cannot read the signing secret, the delivery will be retried: ${describeWithStack(err)}`,
          );
          // 503, not 500: an outage of the secret source, never counted against the message.
          return json({ error: 'Service unavailable' }, 503);
        }
      }
      const verify = (secrets: readonly string[]) =>
        verifySignature(secrets, req, bytes, now(), SIGNATURE_TOLERANCE_SECONDS, trust, opts.lambdaSelf);
      let v = verify(accepted);
      // Maybe rotated since the last read: re-read (rate-limited) and try once more.
      if (!v.ok && v.reason === 'bad signature' && source && (await source.refreshAfterFailure())) {
        v = verify(await source.accepted());
      }
      if (!v.ok) return unauthorized(req, v.reason);
      let fresh: boolean;
      try {
        fresh = await replay.claim(v.signature, v.timestamp);
      } catch (err) {
        logError(
          `[eve-world-aws] flow route: replay check failed, the delivery will be retried: ${describeWithStack(err)}`,
        );
        return json({ error: 'Service unavailable' }, 503);
      }
      if (!fresh) return unauthorized(req, 'replayed request');
    }

    // Header values travel encoded when they are not plain ASCII (src/queue/header-values.ts).
    const queueName = decodeHeaderValue(req.headers.get('x-vqs-queue-name') ?? '');
    const messageId = decodeHeaderValue(req.headers.get('x-vqs-message-id') ?? '');
    // Absent or empty reads as 0: refused below.
    const attempt = Number(req.headers.get('x-vqs-message-attempt'));
    if (
      !queueName ||
      !ValidQueueName.safeParse(queueName).success ||
      !messageId ||
      !Number.isInteger(attempt) ||
      attempt < 1
    ) {
      return json({ error: 'Missing required headers' }, 400);
    }
    if (!queueName.startsWith(prefix)) return json({ error: 'Unhandled queue' }, 400);
    if (bytes.byteLength === 0) return json({ error: 'Missing request body' }, 400);

    let body: unknown;
    try {
      body = decodePayload(decoder.decode(bytes));
    } catch {
      return json({ error: 'Malformed request body' }, 400);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return json({ error: 'Malformed request body: expected a JSON object' }, 400);
    }

    // The id `queue()` returned, when the delivery runs under another (an early delivery's own,
    // src/queue/delivery-id.ts); trusted, as the tail, only when the signature covered it.
    const sentAs = acceptUnsigned ? null : req.headers.get(MESSAGE_ID_HEADER);
    const queuedId = (sentAs ? decodeHeaderValue(sentAs) : undefined) ?? messageId;
    const ids = queuedId === messageId ? { messageId } : { messageId: queuedId, deliveryId: messageId };

    // The tail is trusted only when the signature covered it (always, unless unsigned is allowed),
    // and only on the message's first delivery: an earlier delivery of it may have committed
    // events and died before sending the messages they cause, and then only this redelivery
    // (attempt > 1) can find them, so it must read the log (see src/context/delivery-scope.ts).
    const tail = acceptUnsigned || attempt !== 1 ? undefined : decodeLogTail(req.headers.get(LOG_TAIL_HEADER));
    const lease: StepLease | undefined = opts.stepLease
      ? { token: randomUUID(), ttlMs: opts.stepLease.ttlMs, started: new Map() }
      : undefined;
    const scope: DeliveryScope = {
      messageId,
      attempt,
      logTails: new Map(tail ? [[tail.runId, tail.slot]] : []),
      readTails: new Map(),
      ...(lease ? { stepLease: lease } : {}),
    };
    const endLeases = lease
      ? keepStepLeases(lease, opts.stepLease as StepLeasePort, req.signal, messageId, logError)
      : undefined;
    try {
      let result: unknown;
      try {
        // Core runs under the consumer's delivery span: its signed `traceparent` (unsigned: none).
        const parent = acceptUnsigned ? undefined : req.headers.get(TRACEPARENT_HEADER);
        const runId = (body as { runId?: unknown }).runId;
        result = await withRemoteParent(parent, () =>
          withLogContext(
            { ...ids, queue: queueName, attempt, runId: typeof runId === 'string' ? runId : undefined },
            () =>
              runInDelivery(scope, () =>
                handler(body, {
                  attempt,
                  queueName: queueName as ValidQueueName,
                  messageId: messageId as MessageId,
                }),
              ),
          ),
        );
      } finally {
        await endLeases?.();
      }
      const turn = body as { runId?: unknown; stepId?: unknown };
      const read = typeof turn.runId === 'string' ? scope.readTails?.get(turn.runId) : undefined;
      if (read !== undefined && turn.stepId === undefined) opts.onTurnDone?.(turn.runId as string, read, queueName);
      if ((body as { invoke?: unknown }).invoke === true) return json({ result });
      const timeoutSeconds = (result as { timeoutSeconds?: unknown } | null | undefined)?.timeoutSeconds;
      if (typeof timeoutSeconds === 'number' && Number.isFinite(timeoutSeconds) && timeoutSeconds >= 0) {
        return json({ timeoutSeconds });
      }
      return json({ ok: true });
    } catch (err) {
      logError(
        `[eve-world-aws] flow route: handler failed for message ${queuedId}${ids.deliveryId ? ` (delivered early as ${messageId})` : ''} on ${queueName} (attempt ${attempt}): ${describeWithStack(err)}`,
        { ...ids, queue: queueName, attempt, errorName: err instanceof Error ? err.name : typeof err },
      );
      return json({ error: 'Internal error' }, 500);
    }
  };
}

/** A header of an untrusted request, for a log line: decoded, quoted, cut short. */
function describeHeader(req: Request, name: string): string {
  const raw = req.headers.get(name);
  if (raw === null) return `(no ${name})`;
  return JSON.stringify((decodeHeaderValue(raw) ?? raw).slice(0, 200));
}
