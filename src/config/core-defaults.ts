/**
 * The one write to `process.env` at runtime, for `@workflow/core`, which reads its own variable:
 * {@link applyCoreDefaults}, called by `createWorld()`. Their rows (`SETTINGS.variables`,
 * variables.ts) (`WORKFLOW_OPTIMISTIC_INLINE_START`, `WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS`) say
 * so in docs/configuration.md, and test/unit/config.test.ts checks that no other runtime module
 * writes the environment.
 */

import { SETTINGS } from './catalogue.js';
import type { Env } from './setting.js';

/**
 * Core's turbo mode (default on) forces an optimistic inline start on a run's first delivery: the
 * first step's body runs BEFORE its `step_started` commits (@workflow/core step-executor.js,
 * `optimisticStart`). Two copies of that delivery (SQS at-least-once) would both run it, and no
 * fence on `step_started` (src/storage/write/step-lease.ts) can stop a body that precedes it. Core
 * defers to an explicit `WORKFLOW_OPTIMISTIC_INLINE_START=0` (turbo stays on otherwise), so the
 * World sets that when the operator has set nothing: every body then starts after its
 * `step_started` (cost: the first step's body waits for that one write instead of overlapping it).
 * An explicit `1` keeps optimistic starts, and with them possible duplicate bodies of a run's first
 * step.
 *
 * Core's inline-ownership lease (860 s by default) delays the wake another invocation arms for a
 * step a live delivery owns (docs/design.md, "Early delivery"). The step lease fences the body
 * itself, so the World shortens it to 20 s: a dead owner's step is picked up within that.
 */
export function applyCoreDefaults(env: Env = process.env): void {
  for (const setting of [SETTINGS.variables.optimisticInlineStart, SETTINGS.variables.inlineOwnershipLease]) {
    if (env[setting.name] === undefined || env[setting.name] === '') env[setting.name] = setting.default;
  }
}
