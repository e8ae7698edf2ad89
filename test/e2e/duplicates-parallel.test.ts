/**
 * Parallel duplicate handling: every delivery is handed to the flow route twice at the same time,
 * bypassing the consumer's duplicate guard (as two Lambda containers receiving two copies of one
 * SQS message would). Runs must still complete with one terminal event per step and per run.
 *
 * Step bodies: both copies carry the same message id, which core reads as "the inline owner
 * crashed and this is its redelivery" and may re-run a started step; and core's turbo mode runs
 * a lazily started body optimistically before its `step_started` commits. Core documents inline
 * step bodies as idempotent for exactly this case, so bodies are asserted to run at least once;
 * the World's guarantee here is the event log: one `step_completed` per step, one terminal event
 * per run, lazy-start losers get `EntityConflictError`.
 */
import { duplicateDeliveryCases } from '../helpers/duplicate-cases.js';

duplicateDeliveryCases('handler', { bodiesRunOnce: false });
