/**
 * Counts the liveness backstop's wakes (src/backstop/check.ts logs `backstop: waking run <id>
 * (wake <n>): <why>` for each) from log lines, for the fault suite's "backstop" column: a World's
 * logger in this process, and the stdout of its consumer processes, which arrives in chunks that
 * may split a line.
 */
import type { Logger } from '../../src/telemetry/log.js';

const WAKE = /backstop: waking run (\S+) \(wake \d+\)/;

export class BackstopTally {
  /** Wakes sent, and the distinct runs they were for. */
  wakes = 0;
  readonly runs = new Set<string>();
  readonly #partial = new Map<string, string>();

  /** One whole log line. */
  line(text: string): void {
    const m = WAKE.exec(text);
    if (!m) return;
    this.wakes++;
    this.runs.add(m[1]);
  }

  /** A chunk of a stream named `source` (one per child process): whole lines only are read. */
  chunk(source: string, text: string): void {
    const lines = ((this.#partial.get(source) ?? '') + text).split('\n');
    this.#partial.set(source, lines.pop() ?? '');
    for (const l of lines) this.line(l);
  }

  /** `inner`, with its info lines also read here. */
  logger(inner: Logger): Logger {
    return {
      ...inner,
      info: (msg, fields) => {
        this.line(msg);
        inner.info(msg, fields);
      },
    };
  }
}
