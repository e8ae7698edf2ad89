/**
 * The reconcile engine shared by every resource of `src/provision/`: the report a resource
 * produces, and the {@link Setting}s (hardening settings) each resource is checked against.
 *
 * Modes: `apply` (what `init` and `emulate` run) creates what is missing and fixes drift, `dry-run`
 * plans it, `verify` (what `doctor` runs) only reports.
 *
 * Invariants, enforced by {@link reconcileSettings}:
 * - Every setting is re-checked on every run, not only when its resource is created (an interrupted
 *   `init`, or a bucket that already existed, must not stay unhardened).
 * - One setting never stops the others: a failed read or fix is reported (`failed`) and the next
 *   `init` applies it.
 * - A setting the endpoint does not implement (an emulator) is `skipped` with the reason, never
 *   reported as applied nor silently ignored.
 */
import { describeError, errorName, isUnsupported } from '../aws/sdk-errors.js';

export type ResourceKind = 'table' | 'queue' | 'dlq' | 'bucket' | 'schedule-group' | 'encryption';
/**
 * `updated`: present, and `init` just fixed drifted settings; `would-update`: the dry-run plan for
 * that. `drift` is what is left that `init` could not (or, in `verify`, did not) fix.
 */
export type ResourceState = 'present' | 'created' | 'updated' | 'would-create' | 'would-update' | 'missing' | 'drift';

export interface ResourceReport {
  kind: ResourceKind;
  name: string;
  state: ResourceState;
  /** What was checked or done, one line each. */
  details: string[];
  /** For drift / missing: how to fix it. */
  fix?: string;
  /** Hardening settings of this resource and what happened to each. */
  settings?: SettingReport[];
}

/**
 * ok: as wanted. fixed: was drifted, applied now. would-fix: drifted, dry run. drift: drifted and
 * not fixed (verify mode, or not fixable automatically). failed: the fix was attempted and failed.
 * skipped: the endpoint does not implement the setting (an emulator), with the reason.
 */
export type SettingState = 'ok' | 'fixed' | 'would-fix' | 'drift' | 'failed' | 'skipped';

export interface SettingReport {
  setting: string;
  state: SettingState;
  detail: string;
}

/** One hardening setting: how to read it, and how to fix it when it drifted. */
export interface Setting {
  name: string;
  /** What the fix does, e.g. "block all public access". */
  want: string;
  check(): Promise<SettingCheck>;
  /** Absent when the drift cannot be fixed automatically (then `check` names the manual fix). */
  apply?: () => Promise<void>;
}

export type SettingCheck =
  | { ok: true; detail?: string }
  | { ok: false; problem: string; manualFix?: string }
  | { unsupported: string };

export type ReconcileMode = 'apply' | 'dry-run' | 'verify';

/**
 * Check every setting and fix, plan or report its drift according to `mode`. Never throws for one
 * setting: a failed read or fix is reported and the others still run.
 */
export async function reconcileSettings(settings: Setting[], mode: ReconcileMode): Promise<SettingReport[]> {
  const out: SettingReport[] = [];
  for (const s of settings) {
    const report = (state: SettingState, detail: string) => out.push({ setting: s.name, state, detail });
    let c: SettingCheck;
    try {
      c = await s.check();
    } catch (err) {
      if (isUnsupported(err))
        c = { unsupported: `not implemented by this endpoint (${errorName(err) || 'unsupported'})` };
      else {
        report('failed', `could not read it: ${describeError(err)}`);
        continue;
      }
    }
    if ('unsupported' in c) report('skipped', `skipped: ${c.unsupported}`);
    else if (c.ok) report('ok', c.detail ?? s.want);
    else if (!s.apply || mode === 'verify' || c.manualFix !== undefined)
      report('drift', c.manualFix ? `${c.problem}; fix: ${c.manualFix}` : c.problem);
    else if (mode === 'dry-run') report('would-fix', `${c.problem}; would ${s.want}`);
    else {
      try {
        await s.apply();
        report('fixed', `${c.problem}; fixed: ${s.want}`);
      } catch (err) {
        if (isUnsupported(err)) report('skipped', `skipped: not implemented by this endpoint (${errorName(err)})`);
        else report('failed', `${c.problem}; could not ${s.want}: ${describeError(err)}`);
      }
    }
  }
  return out;
}

/** Fold the settings into the report: details, and the state they imply. */
export function applySettings(report: ResourceReport, settings: SettingReport[], fixCommand: string): void {
  report.settings = settings;
  for (const s of settings) report.details.push(`${s.setting}: ${s.detail}`);
  const bad = settings.filter((s) => s.state === 'drift' || s.state === 'failed');
  if (bad.length > 0) {
    report.state = 'drift';
    const fix = `run \`${fixCommand}\` to apply ${bad.map((s) => s.setting).join(', ')}`;
    report.fix = report.fix ? `${report.fix}; ${fix}` : fix;
    return;
  }
  if (report.state !== 'present') return;
  if (settings.some((s) => s.state === 'fixed')) report.state = 'updated';
  else if (settings.some((s) => s.state === 'would-fix')) report.state = 'would-update';
}
