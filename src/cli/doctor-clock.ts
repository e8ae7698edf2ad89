/**
 * doctor's clock-skew check against the AWS (or emulator) server: the Date header of every
 * DynamoDB response, sampled with the local request window around it, bounds the skew.
 *
 * Clock skew matters twice: AWS rejects signatures more than 5 minutes off, and long waits are
 * released by comparing `deliverAt` (stamped by the sender's clock) with the consumer's clock.
 */
import type { AwsClients } from '../aws/clients.js';
import type { Check } from './doctor-checks.js';

/** One Date-header sample: the server's time and the local request window around it. */
export interface ClockSample {
  serverDate: string;
  sentAt: number;
  receivedAt: number;
}

/**
 * Skew = server time - local time. The Date header has whole seconds (truncated), so the server's
 * time at the moment it answered lies in [date, date + 1 s), and that moment lies in the local
 * request window [sentAt, receivedAt]. That bounds the skew to an interval; `skewMs` is the end of
 * it nearest zero (0 when the interval contains zero: no skew measurable at this resolution), so
 * only skew that is certain counts against the limit.
 */
export function assessSkew(sample: ClockSample, maxSkewMs: number) {
  const date = Date.parse(sample.serverDate);
  const lowMs = date - sample.receivedAt;
  const highMs = date + 1000 - sample.sentAt;
  const skewMs = lowMs > 0 ? lowMs : Math.min(highMs, 0);
  return { skewMs, lowMs, highMs, ok: Math.abs(skewMs) <= maxSkewMs };
}

/** Records the Date header and timing of every raw HTTP response of `clients`' DynamoDB client. */
export function sampleClock(clients: AwsClients): ClockSample[] {
  const samples: ClockSample[] = [];
  clients.ddb.middlewareStack.add(
    (next) => async (args) => {
      const sentAt = Date.now();
      const out = await next(args);
      const receivedAt = Date.now();
      const headers = (out.response as { headers?: Record<string, string> })?.headers ?? {};
      const date = headers.date ?? headers.Date;
      if (date) samples.push({ serverDate: date, sentAt, receivedAt });
      return out;
    },
    // Innermost (after the deserializer), so error responses are sampled too.
    { step: 'deserialize', priority: 'low', name: 'eveWorldAwsDoctorClock' },
  );
  return samples;
}

export function clockCheck(samples: ClockSample[], maxSkewMs: number): Check {
  if (samples.length === 0) return { check: 'clock skew', status: 'skip', details: 'the server sent no Date header' };
  // The fastest round trip gives the tightest bound.
  const best = samples.reduce((a, b) => (b.receivedAt - b.sentAt < a.receivedAt - a.sentAt ? b : a));
  const { skewMs, ok } = assessSkew(best, maxSkewMs);
  const resolution = ((best.receivedAt - best.sentAt + 1000) / 1000).toFixed(1);
  const text =
    skewMs === 0
      ? `in sync with the server (to within ${resolution} s, the Date header's resolution)`
      : `local clock ${skewMs > 0 ? 'behind' : 'ahead'} by at least ${(Math.abs(skewMs) / 1000).toFixed(1)} s`;
  return ok
    ? { check: 'clock skew', status: 'pass', details: text }
    : {
        check: 'clock skew',
        status: 'fail',
        details: `${text}; limit ${maxSkewMs / 1000} s`,
        fix: 'synchronise the clock (NTP, e.g. `timedatectl set-ntp true` or chrony); AWS rejects requests over 5 minutes off and long waits fire early or late by the skew',
      };
}
