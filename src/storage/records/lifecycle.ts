/**
 * When an entity is done and when it is gone.
 * - Terminal statuses of runs and steps: `@workflow/world`'s predicates, and the run's as a
 *   DynamoDB condition built from the same list, so the two can never disagree.
 * - Past an item's `ttl`, reads treat it as gone even before DynamoDB's background TTL sweep
 *   (typically within a day or two) deletes it. The TTL is stamped by retention (../write/retention.ts).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { isTerminalStepStatus, isTerminalWorkflowRunStatus, TERMINAL_WORKFLOW_RUN_STATUSES } from '@workflow/world';
import { ATTR } from '../../schema/keys.js';
import type { Attrs } from '../table/codec.js';
import { not, type Part, part, STATUS_NAME } from '../table/expression.js';

/** Whether a run status is terminal (an absent status is not). */
export const isTerminalRun = (s: string | undefined): boolean => s !== undefined && isTerminalWorkflowRunStatus(s);

/** Whether a step status is terminal (an absent status is not). */
export const isTerminalStep = (s: string | undefined): boolean => s !== undefined && isTerminalStepStatus(s);

const placeholders = TERMINAL_WORKFLOW_RUN_STATUSES.map((_, i) => `:st_t${i}`);

/** "The run is not terminal". Use with `ExpressionAttributeNames: { '#st': 'status' }` and {@link TERMINAL_VALUES}. */
export const NOT_TERMINAL = `NOT (#st IN (${placeholders.join(', ')}))`;
export const TERMINAL_VALUES: Record<string, AttributeValue> = Object.fromEntries(
  TERMINAL_WORKFLOW_RUN_STATUSES.map((s, i) => [placeholders[i], { S: s }]),
);

/** The run is not terminal, as an expression part ({@link NOT_TERMINAL} with its placeholders). */
export const runNotTerminal: Part = part(NOT_TERMINAL, TERMINAL_VALUES, STATUS_NAME);

/** The run is terminal: `NOT (<not terminal>)`. */
export const runIsTerminal: Part = not(runNotTerminal);

/** Whether an item's TTL has passed (DynamoDB may not have deleted it yet). */
export function expired(item: Attrs | undefined, now = Date.now()): boolean {
  const ttl = item?.[ATTR.ttl]?.N;
  return ttl !== undefined && Number(ttl) * 1000 <= now;
}
