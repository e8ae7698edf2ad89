/**
 * How fast this machine runs the tests right now, measured, so the timing-sensitive tests (tagged
 * `timing` in vitest.config.ts) take the margins of their waits from it instead of from an idle
 * machine: {@link slowdown} is the wall time over the CPU time of a short busy loop in this
 * process, 1 when it has a core to itself, about 3 when it gets a third of one (a load average
 * of 6 on 2 cores). Measured once per test file, at import, before the file starts its own work.
 *
 * Only margins scale: how long a test waits for something that will happen (a delivery, a child
 * process ready, a run completing). A bound the product promises (a wake within B + T, a lease
 * extended by its heartbeat) is asserted as it is, whatever the load.
 */

/** Wall over CPU time of `samples` busy loops of `sliceMs` of CPU each; the median, at least 1. */
export function measureSlowdown(samples = 5, sliceMs = 20): number {
  const ratios: number[] = [];
  for (let i = 0; i < samples; i++) {
    const wall0 = performance.now();
    const cpu0 = process.cpuUsage();
    let cpuMs = 0;
    let x = 0;
    while (cpuMs < sliceMs) {
      for (let j = 0; j < 10_000; j++) x = (x * 31 + j) % 1_000_003;
      const used = process.cpuUsage(cpu0);
      cpuMs = (used.user + used.system) / 1000;
    }
    ratios.push((performance.now() - wall0) / cpuMs + (x < 0 ? 1 : 0));
  }
  ratios.sort((a, b) => a - b);
  return Math.max(1, ratios[Math.floor(ratios.length / 2)]);
}

/** The slowdown at this file's import, capped at 5 (beyond it a wait is no longer a margin). */
export const slowdown: number = Math.min(5, measureSlowdown());

/** `ms` (a margin measured on an idle machine) scaled by {@link slowdown}. */
export const scaled = (ms: number): number => Math.round(ms * slowdown);

/** One line for a test's log: the slowdown its margins were scaled by. */
export const paceNote = (): string => `margins x${slowdown.toFixed(2)} (measured wall/CPU of a busy loop)`;
