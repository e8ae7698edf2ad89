/**
 * What a run that is not terminal waits for, folded from its event log (the same events `tail`
 * shows): hooks created and not disposed (by token: `eve-world-aws resume <token>` resumes one),
 * waits created and not completed (until when), and steps created and not finished (queued,
 * running with their attempt, or retrying after a time). Order: as they appeared in the log.
 */
import type { Event } from '@workflow/world';
import { eventKind } from '../schema/event-kinds.js';
import { shortName } from './shared/format.js';

type Pending =
  | { kind: 'hook'; token: string }
  | { kind: 'wait'; until?: string }
  | { kind: 'step'; name: string; state: 'queued' | 'running' | 'retrying'; attempt: number; retryAfter?: string };

const iso = (v: unknown): string | undefined => {
  if (v === undefined || v === null) return undefined;
  const d = new Date(v as string);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
};

export class RunWaits {
  /** By correlation id (hook, wait or step id), in first-seen order. */
  private readonly pending = new Map<string, Pending>();

  apply(e: Event): void {
    const id = e.correlationId;
    if (!id) return;
    // What the event does to a step, hook or wait (src/schema/event-kinds.ts, `lifecycle`).
    const life = eventKind(e.eventType)?.lifecycle;
    if (!life) return;
    const data = ((e as { eventData?: unknown }).eventData ?? {}) as Record<string, unknown>;
    if (life.phase === 'ends') {
      this.pending.delete(id);
      return;
    }
    switch (life.of) {
      case 'hook':
        // A hook stays pending while it receives: it may receive again until disposed.
        if (life.phase === 'opens') this.pending.set(id, { kind: 'hook', token: String(data.token ?? id) });
        return;
      case 'wait':
        this.pending.set(id, { kind: 'wait', until: iso(data.resumeAt) });
        return;
      case 'step':
        this.applyStep(id, life.phase, data);
    }
  }

  private applyStep(id: string, phase: 'opens' | 'starts' | 'retries', data: Record<string, unknown>): void {
    const cur = this.pending.get(id);
    const prev = cur?.kind === 'step' ? cur : undefined;
    switch (phase) {
      case 'opens':
        this.pending.set(id, { kind: 'step', name: String(data.stepName ?? id), state: 'queued', attempt: 0 });
        return;
      case 'starts': {
        const attempt = typeof data.attempt === 'number' ? data.attempt : (prev?.attempt ?? 0) + 1;
        this.pending.set(id, {
          kind: 'step',
          name: String(data.stepName ?? prev?.name ?? id),
          state: 'running',
          attempt,
        });
        return;
      }
      case 'retries':
        if (prev) this.pending.set(id, { ...prev, state: 'retrying', retryAfter: iso(data.retryAfter) });
    }
  }

  /** One phrase per pending item, e.g. `hook order-42`, `wait until 2026-12-02T10:00:00.000Z`, `step charge (attempt 2)`. */
  describe(): string[] {
    return [...this.pending.values()].map((p): string => {
      switch (p.kind) {
        case 'hook':
          return `hook ${p.token}`;
        case 'wait':
          return p.until ? `wait until ${p.until}` : 'wait';
        default: {
          const name = shortName(p.name);
          if (p.state === 'queued') return `step ${name} (queued)`;
          if (p.state === 'retrying')
            return `step ${name} (retrying after attempt ${p.attempt}${p.retryAfter ? `, at ${p.retryAfter}` : ''})`;
          return `step ${name} (attempt ${p.attempt})`;
        }
      }
    });
  }
}
