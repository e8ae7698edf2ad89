/**
 * Workflow names as users type them. The runtime records a workflow by its full id,
 * `workflow//<file>//<export>` (e.g. `workflow//./workflows/order//order`); a user types `order`. A
 * name with `//` is taken as a full id (matched exactly, and the run listing has an index for it);
 * any other name matches the export name, the part after the last `//`. Matching is exact: a name
 * that matches nothing gets the near names as a hint ({@link nearWorkflows}), never a guess.
 */

import { editDistance } from '../util/edit-distance.js';
import { shortName } from './shared/format.js';

export const isFullWorkflowName = (query: string): boolean => query.includes('//');

/** Whether the recorded `workflowName` is the workflow the user named with `query`. */
export function workflowMatches(workflowName: string, query: string): boolean {
  return isFullWorkflowName(query) ? workflowName === query : shortName(workflowName) === query;
}

/**
 * The full ids among `workflowIds` whose export name is near the one `query` names, nearest first
 * (at most `max`): the same name in another case, then names it begins, then names holding it (3
 * characters or more), then names at most a third of its length (at least 1) edits away. A workflow
 * `query` names exactly is not near, it is the answer.
 */
export function nearWorkflows(query: string, workflowIds: Iterable<string>, max = 5): string[] {
  const q = shortName(query).toLowerCase();
  const limit = Math.max(1, Math.floor(q.length / 3));
  const ranked: { id: string; rank: number; distance: number }[] = [];
  for (const id of new Set(workflowIds)) {
    if (workflowMatches(id, query)) continue;
    const name = shortName(id).toLowerCase();
    const distance = editDistance(q, name);
    // The first of these tests it passes, in the order the doc comment gives (-1: none).
    const rank = [
      name === q,
      q.length >= 2 && name.startsWith(q),
      q.length >= 3 && name.includes(q),
      distance <= limit,
    ].indexOf(true);
    if (rank >= 0) ranked.push({ id, rank, distance });
  }
  return ranked
    .sort((x, y) => x.rank - y.rank || x.distance - y.distance || x.id.localeCompare(y.id))
    .slice(0, max)
    .map((r) => r.id);
}

/** `order (workflow//./workflows/order//order)`, how a hint names a workflow. */
export const describeWorkflow = (workflowId: string): string =>
  shortName(workflowId) === workflowId ? workflowId : `${shortName(workflowId)} (${workflowId})`;
