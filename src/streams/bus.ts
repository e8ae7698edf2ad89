/**
 * The in-process bus: after a block is committed to DynamoDB, the writer publishes it here with its
 * bytes, and live readers in this process take it from memory instead of querying. Module level, so
 * every World instance on the same table in this process shares it.
 *
 * A published block is always already durable, so a reader that delivers it never shows a chunk
 * that could later vanish. Readers use the bus only when the block starts exactly at their
 * position; anything else (a missed message, another process's writes) falls back to a Query, so a
 * lost or spurious message costs latency, never correctness.
 */
import { EventEmitter } from 'node:events';

/** A committed block: data chunks in order (empty chunks included), or the EOF at `first`. */
export interface CommittedBlock {
  first: number;
  chunks: Uint8Array[];
  eof: boolean;
}

const bus = new EventEmitter();
bus.setMaxListeners(0);

export const busKey = (table: string, runId: string, name: string) => `${table}\0${runId}\0${name}`;

export function publish(key: string, block: CommittedBlock): void {
  bus.emit(key, block);
}

export function subscribe(key: string, fn: (block: CommittedBlock) => void): () => void {
  bus.on(key, fn);
  return () => bus.off(key, fn);
}

let liveReaders = 0;

export function readerStarted(): void {
  liveReaders++;
}

export function readerFinished(): void {
  liveReaders--;
}

/** Live readers currently holding a listener or timer; 0 once all are done or cancelled. */
export function activeStreamReaders(): number {
  return liveReaders;
}

/** Listeners registered on the bus (diagnostics for leak tests). */
export function streamSignalListeners(): number {
  return bus.eventNames().reduce((n, e) => n + bus.listenerCount(e), 0);
}
