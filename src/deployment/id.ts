/**
 * The deployment this process is: the id `getDeploymentId()` reports (what core pins each new run
 * to) and whether the World declares `capabilities.deploymentAffinity` (`@workflow/core`'s
 * deployment guard).
 *
 * Invariants:
 * - With affinity on, the id names one immutable build: core compares it with a run's pin by strict
 *   equality, so two builds never share an id and one build never reports two. In Lambda it is
 *   `lambda:<function>:<version>` (a published version is immutable, and the worker invokes that
 *   version for the run's messages: src/consumer/delivery/invoke.ts); affinity there is refused on
 *   `$LATEST` and with EVE_WORLD_AWS_DEPLOYMENT_ID set, where no worker could reach the build by
 *   its id. On a plain Node host it is `build:<fingerprint>` of the workflow code core loads (found
 *   by ./build-location.ts, hashed by ./fingerprint.ts), unless EVE_WORLD_AWS_DEPLOYMENT_ID names
 *   it; no build found and none named: refused, naming the fix.
 * - An id set by hand is registered with the fingerprint of the build this process runs ({@link
 *   DeploymentIdentity.fingerprint}); src/deployment/registry.ts refuses a second build under that
 *   id.
 * - With affinity off, nothing changes from before affinity existed: every process reports
 *   EVE_WORLD_AWS_DEPLOYMENT_ID, else {@link LEGACY_DEPLOYMENT_ID}, and core runs no guard.
 * - Whether affinity is on is the table's decision, not this module's: src/deployment/membership.ts
 *   reads it from the table's format item and passes it here as `config.deploymentAffinity`.
 */
import { ConfigError, type WorldConfig } from '../config/index.js';
import { buildDeploymentId, nodeBuild } from './fingerprint.js';

/** The id every process reported before affinity existed, and still reports with affinity off. */
export const LEGACY_DEPLOYMENT_ID = 'eve-world-aws';

export type DeploymentShape = 'lambda' | 'node';

export interface DeploymentIdentity {
  /** Whether the World declares `capabilities.deploymentAffinity`. */
  readonly affinity: boolean;
  readonly shape: DeploymentShape;
  /** The id, computed once (hashing a build reads its files). */
  id(): Promise<string>;
  /**
   * The fingerprint of the build this process runs, registered beside its id
   * (src/deployment/registry.ts): on a plain Node host with affinity on; none in Lambda (a
   * published version is immutable) or with affinity off. With an id set by hand and no build
   * found, none, and `note` says why (the registry then cannot tell two builds under that id
   * apart).
   */
  fingerprint(): Promise<{ value?: string; note?: string }>;
}

/**
 * Whether affinity is on for this config (the table's decision, see above). Throws a ConfigError
 * where this process cannot take part: inside Lambda on `$LATEST` (not immutable) or under an id
 * the worker cannot invoke (EVE_WORLD_AWS_DEPLOYMENT_ID).
 */
export function affinityEnabled(
  config: Pick<WorldConfig, 'deploymentAffinity' | 'deploymentId' | 'lambdaFunction'>,
): boolean {
  if (config.deploymentAffinity !== 'on') return false;
  const fn = config.lambdaFunction;
  if (fn && config.deploymentId !== undefined) {
    throw new ConfigError(
      'EVE_WORLD_AWS_DEPLOYMENT_ID',
      `is set, but this process runs in Lambda (${fn.name}) on a table with deployment affinity, where the worker delivers a run's messages to the version its id names (lambda:<function>:<version>): leave it unset`,
      'unset',
    );
  }
  if (fn && lambdaDeploymentId(fn) === undefined) {
    throw new ConfigError(
      'AWS_LAMBDA_FUNCTION_VERSION',
      `is $LATEST, but ${fn.name} runs on a table with deployment affinity, where a run's messages go to the published version that started it and $LATEST is not one: serve a published version (the CDK construct's \`live\` alias)`,
      '7',
    );
  }
  return true;
}

/**
 * The id of an immutable build when affinity is on and none is set: the Lambda version
 * (`$LATEST` is not one: undefined), else undefined (a plain Node host hashes its build).
 */
export function lambdaDeploymentId(fn: WorldConfig['lambdaFunction']): string | undefined {
  if (!fn || fn.version === undefined || fn.version === '$LATEST') return undefined;
  return `lambda:${fn.name}:${fn.version}`;
}

/** The deployment identity of this process (see the invariants above). */
export function deploymentIdentity(
  config: Pick<WorldConfig, 'deploymentAffinity' | 'deploymentId' | 'lambdaFunction' | 'buildDir'>,
  entryScript: string | undefined = process.argv[1],
): DeploymentIdentity {
  const affinity = affinityEnabled(config);
  const fn = config.lambdaFunction;
  const shape: DeploymentShape = fn ? 'lambda' : 'node';
  const once = <T>(f: () => Promise<T>): (() => Promise<T>) => {
    let p: Promise<T> | undefined;
    return () => {
      p ??= f().catch((err) => {
        p = undefined;
        throw err;
      });
      return p;
    };
  };
  const build = once(() => nodeBuild(config.buildDir, entryScript));
  const derive = async (): Promise<string> => {
    if (config.deploymentId !== undefined) return config.deploymentId;
    if (!affinity) return LEGACY_DEPLOYMENT_ID;
    return lambdaDeploymentId(fn) ?? buildDeploymentId(await build(), config.buildDir !== undefined);
  };
  const fingerprint = async (): Promise<{ value?: string; note?: string }> => {
    if (!affinity || fn) return {};
    const found = await build();
    return 'fingerprint' in found ? { value: found.fingerprint } : { note: found.missing };
  };
  return { affinity, shape, id: once(derive), fingerprint: once(fingerprint) };
}
