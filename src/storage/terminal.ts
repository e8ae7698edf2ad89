/**
 * What "terminal" means for runs and steps (completed, failed, cancelled), once as a JS predicate
 * and once as a DynamoDB condition, so the two can never disagree.
 */
export const isTerminal = (s: string | undefined) => s === 'completed' || s === 'failed' || s === 'cancelled';

/** Use with `ExpressionAttributeNames: { '#st': 'status' }` and {@link TERMINAL_VALUES}. */
export const NOT_TERMINAL = 'NOT (#st IN (:st_c, :st_f, :st_x))';
export const TERMINAL_VALUES = { ':st_c': { S: 'completed' }, ':st_f': { S: 'failed' }, ':st_x': { S: 'cancelled' } };
