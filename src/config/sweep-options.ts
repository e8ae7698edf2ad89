/**
 * The orphan sweep's settings (src/sweep/): `OrphanSweepOptions.graceMs` (`sweepOrphans`,
 * `world.sweepOrphans`, the CLI's `sweep --older-than`) and `SweepHandlerOptions.marginMs` (the
 * scheduled Lambda handler, `createSweepHandler`), not variables: one row each, whose default the
 * sweep reads (catalogue.ts).
 */
import { option } from './setting.js';

export const SWEEP_OPTIONS = {
  graceMs: option({
    name: 'graceMs',
    default: 3_600_000,
    values: 'ms, >= 0',
    description:
      "The sweep's grace: objects younger than this, and every object of a run that ended more recently, are kept; a prefix with no run item is swept only once its run id is older than core's run-creation window plus this. The CLI's `sweep --older-than` sets it; the scheduled handler takes it from `createSweepHandler({ graceMs })`, and an invocation's event `{\"graceMs\": ...}` wins.",
  }),
  marginMs: option({
    name: 'marginMs',
    default: 60_000,
    values: 'ms; at most a quarter of the time left when the invocation starts',
    description:
      'Scheduled sweep handler (`createSweepHandler({ marginMs })`): how long before the Lambda deadline it stops starting run prefixes, so the runs in progress finish within it and the invocation returns normally; the runs it finished are marked clean and the next sweep continues with the rest.',
  }),
} as const;
