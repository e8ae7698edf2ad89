/**
 * Parallel duplicate handling: every delivery is handed to the flow route twice at the same time,
 * bypassing the consumer's duplicate guard (as two Lambda containers receiving two copies of one
 * SQS message would). Runs must complete with one terminal event per step and per run, and every
 * step body runs once.
 *
 * Both copies carry the same message id, which core reads as "the inline owner crashed and this is
 * its redelivery" and starts the running step again; the step lease (src/storage/write/step-lease.ts)
 * refuses that start while the first copy's lease lives (`TooEarlyError`: core defers, never runs
 * the body). Core's turbo mode would run a run's first body before its `step_started` commits;
 * the World turns that optimistic start off (src/index.ts), so no body precedes its start.
 */
import { duplicateDeliveryCases } from '../helpers/duplicate-cases.js';

duplicateDeliveryCases('handler', { bodiesRunOnce: true });
