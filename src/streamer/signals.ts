/**
 * The in-process wake-up signal: writers fire it after their chunks land (or a close), and live
 * readers in this process re-query at once instead of waiting for their next poll. Module level
 * so every World instance on the same table in this process shares it. A signal carries no data;
 * readers always read from DynamoDB, so a missed or spurious signal costs latency, never
 * correctness.
 */
import { EventEmitter } from 'node:events';

export const signals = new EventEmitter();
signals.setMaxListeners(0);

export const signalKey = (table: string, runId: string, name: string) => `${table}\0${runId}\0${name}`;

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

/** Listeners registered on the in-process signal (diagnostics for leak tests). */
export function streamSignalListeners(): number {
  return signals.eventNames().reduce((n, e) => n + signals.listenerCount(e), 0);
}
