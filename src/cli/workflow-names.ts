/**
 * Workflow names as users type them. The runtime records a workflow by its full id,
 * `workflow//<file>//<export>` (e.g. `workflow//./workflows/order//order`); a user types `order`.
 * A name with `//` is taken as a full id (matched exactly, and the run listing has an index for
 * it); any other name matches the export name, the part after the last `//`.
 */
import { shortName } from './format.js';

export const isFullWorkflowName = (query: string): boolean => query.includes('//');

/** Whether the recorded `workflowName` is the workflow the user named with `query`. */
export function workflowMatches(workflowName: string, query: string): boolean {
  return isFullWorkflowName(query) ? workflowName === query : shortName(workflowName) === query;
}
