/**
 * `runs` shows each run's deployment (src/cli/runs.ts): a Deployment column once any listed run is
 * pinned to a real deployment, none while every run has the one id of affinity off.
 */
import type { WorkflowRun } from '@workflow/world';
import { describe, expect, it } from 'vitest';
import { renderRuns } from '../../../src/cli/runs.js';
import { runRow } from '../../../src/cli/tail-rows.js';

const run = (runId: string, deploymentId: string): WorkflowRun =>
  ({
    runId,
    deploymentId,
    workflowName: 'workflow//./w//w',
    status: 'running',
    createdAt: new Date(0),
    startedAt: new Date(0),
    updatedAt: new Date(0),
  }) as unknown as WorkflowRun;

describe('runs and deployments', () => {
  it('adds a Deployment column only when a run is pinned to a real deployment', () => {
    const legacy = renderRuns([run('wrun_1', 'eve-world-aws')], false, false, 1000);
    expect(legacy).not.toMatch(/Deployment/);
    const pinned = renderRuns(
      [run('wrun_1', 'eve-world-aws'), run('wrun_2', 'build:0123456789abcdef')],
      false,
      false,
      1000,
    );
    expect(pinned).toMatch(/Duration\s+│\s+Deployment/);
    expect(pinned.split('\n').find((l) => l.includes('wrun_2'))).toMatch(/build:0123456789abcdef/);
    expect(runRow(run('wrun_2', 'lambda:host:7')).deploymentId).toBe('lambda:host:7');
  });
});
