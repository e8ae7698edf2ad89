/**
 * When an entity is done and when it is gone.
 * - Terminal statuses of runs and steps: `@workflow/world`'s predicates, and the run's as a
 *   DynamoDB condition built from the same list, so the two can never disagree.
 * - Past an item's `ttl`, reads treat it as gone even before DynamoDB's background TTL sweep
 *   (typically within a day or two) deletes it. The TTL is stamped by retention
 *   (../write/retention.ts).
 */
import { isTerminalStepStatus, isTerminalWorkflowRunStatus, TERMINAL_WORKFLOW_RUN_STATUSES } from '@workflow/world';
import { type Cond, when } from '../../aws/expression.js';
import { ATTR } from '../../schema/keys.js';
import type { Attrs } from '../table/codec.js';

/** Whether a run status is terminal (an absent status is not). */
export const isTerminalRun = (s: string | undefined): boolean => s !== undefined && isTerminalWorkflowRunStatus(s);

/** Whether a step status is terminal (an absent status is not). */
export const isTerminalStep = (s: string | undefined): boolean => s !== undefined && isTerminalStepStatus(s);

export const runIsTerminal: Cond = when.oneOf('status', TERMINAL_WORKFLOW_RUN_STATUSES);

export const runNotTerminal: Cond = when.not(runIsTerminal);

/** Whether an item's TTL has passed (DynamoDB may not have deleted it yet). */
export function expired(item: Attrs | undefined, now = Date.now()): boolean {
  const ttl = item?.[ATTR.ttl]?.N;
  return ttl !== undefined && Number(ttl) * 1000 <= now;
}
