/**
 * Call order for one Streamer: writes and closes go through a FIFO per stream name, keyed
 * synchronously at call time (before `runId` is awaited), so chunk order is call order even when
 * the caller does not await. Consecutive data jobs of one run are merged into one group while
 * an earlier group is in flight (group commit): one block put carries them all.
 */
import { MAX_GROUP_CHUNKS, type RunIdArg } from './block-items.js';

export type JobKind = 'data' | 'close';

interface Job {
  kind: JobKind;
  runId: RunIdArg;
  chunks: Uint8Array[];
  /** Wall-clock ms at which the writer expects its next block to be committed (a poll hint). */
  nextAt?: number;
  resolve(): void;
  reject(err: unknown): void;
}

export type Flush = (
  kind: JobKind,
  runId: string,
  name: string,
  chunks: Uint8Array[],
  nextAt?: number,
) => Promise<void>;

export class WriteQueue {
  /** Per-name FIFO of pending jobs; present while a drain loop runs. */
  private readonly queues = new Map<string, Job[]>();
  private readonly drains = new Set<Promise<void>>();

  constructor(private readonly flush: Flush) {}

  enqueue(kind: JobKind, runId: RunIdArg, name: string, chunks: Uint8Array[], nextAt?: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const job: Job = { kind, runId, chunks, nextAt, resolve, reject };
      const q = this.queues.get(name);
      if (q) {
        q.push(job);
        return;
      }
      const fresh = [job];
      this.queues.set(name, fresh);
      const running = this.drain(name, fresh).finally(() => this.drains.delete(running));
      this.drains.add(running);
    });
  }

  /** Resolves once every job queued so far (and any queued meanwhile) has settled. */
  async settle(): Promise<void> {
    while (this.drains.size > 0) await Promise.allSettled([...this.drains]);
  }

  private async drain(name: string, q: Job[]): Promise<void> {
    while (q.length > 0) {
      const head = q[0];
      let runId: string;
      try {
        runId = await head.runId;
      } catch (err) {
        q.shift();
        head.reject(err);
        continue;
      }
      if (head.kind === 'close') {
        q.shift();
        await this.flush('close', runId, name, []).then(head.resolve, head.reject);
        continue;
      }
      const group = [q.shift() as Job];
      let count = head.chunks.length;
      while (q.length > 0 && q[0].kind === 'data' && count + q[0].chunks.length <= MAX_GROUP_CHUNKS) {
        let other: string;
        try {
          other = await q[0].runId;
        } catch {
          break; // rejected in its own turn
        }
        if (other !== runId) break;
        const job = q.shift() as Job;
        group.push(job);
        count += job.chunks.length;
      }
      try {
        const chunks = group.flatMap((j) => j.chunks);
        await this.flush('data', runId, name, chunks, group.at(-1)?.nextAt);
        for (const j of group) j.resolve();
      } catch (err) {
        for (const j of group) j.reject(err);
      }
    }
    // Synchronous with the emptiness check above: a later enqueue starts a new loop.
    this.queues.delete(name);
  }
}
