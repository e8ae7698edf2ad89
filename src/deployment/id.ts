/**
 * The deployment this process is: the id `getDeploymentId()` reports (what core pins each new run
 * to) and whether the World declares `capabilities.deploymentAffinity` (core's deployment guard,
 * `@workflow/core`'s deployment guard).
 *
 * Invariants:
 * - With affinity on, the id names one immutable build: core compares it with a run's pin by
 *   strict equality, so two builds never share an id and one build never reports two. In Lambda it
 *   is `lambda:<function>:<version>` (a published version is immutable, and the worker invokes that
 *   version for the run's messages: src/consumer/delivery/invoke.ts); affinity there is refused on `$LATEST`
 *   and with EVE_WORLD_AWS_DEPLOYMENT_ID set, where no worker could reach the build by its id; on a plain Node host `build:<hash>` of the build's files (every file under the build folder, its
 *   relative path and bytes, sorted; `node_modules`, `.eve` and `.workflow-data` skipped), unless
 *   EVE_WORLD_AWS_DEPLOYMENT_ID names it (the build folder: the entry script's, or the `buildDir` option).
 * - With affinity off, nothing changes from before affinity existed: every process reports
 *   EVE_WORLD_AWS_DEPLOYMENT_ID, else {@link LEGACY_DEPLOYMENT_ID}, and core runs no guard.
 * - Whether affinity is on is the table's decision, not this module's: src/deployment/membership.ts
 *   reads it from the table's format item and passes it here as `config.deploymentAffinity`
 *   (`on` or `off`); the variable of that name only asks a new table's first process to record it.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type WorldConfig } from '../config/index.js';

/** The id every process reported before affinity existed, and still reports with affinity off. */
export const LEGACY_DEPLOYMENT_ID = 'eve-world-aws';

/** Folders of a build that are not the build: dependencies and local state. */
const SKIPPED = new Set(['node_modules', '.eve', '.workflow-data', '.git']);

export type DeploymentShape = 'lambda' | 'node';

export interface DeploymentIdentity {
  /** Whether the World declares `capabilities.deploymentAffinity`. */
  readonly affinity: boolean;
  readonly shape: DeploymentShape;
  /** The id, computed once (hashing a build reads its files). */
  id(): Promise<string>;
}

/**
 * Whether affinity is on for this config (`deploymentAffinity`: the table's decision, passed by
 * src/deployment/membership.ts). Throws a ConfigError where this process cannot take part: inside
 * Lambda on `$LATEST` (not immutable) or under an id the worker cannot invoke (EVE_WORLD_AWS_DEPLOYMENT_ID).
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
  let id: Promise<string> | undefined;
  const derive = async (): Promise<string> => {
    if (config.deploymentId !== undefined) return config.deploymentId;
    if (!affinity) return LEGACY_DEPLOYMENT_ID;
    const lambda = lambdaDeploymentId(fn);
    if (lambda) return lambda;
    const dir = config.buildDir ?? (entryScript ? path.dirname(path.resolve(entryScript)) : undefined);
    if (dir === undefined) {
      throw new ConfigError(
        'EVE_WORLD_AWS_DEPLOYMENT_ID',
        'is unset and this process has no entry script to find its build by: name the build',
        'release-2026-12-01',
      );
    }
    // An entry script inside node_modules is a tool's (a CLI that loads the app), not the app's
    // build: its hash would be the same for every build of the app.
    if (config.buildDir === undefined && dir.split(path.sep).includes('node_modules')) {
      throw new ConfigError(
        'EVE_WORLD_AWS_DEPLOYMENT_ID',
        `is unset and the entry script's folder ${dir} is a package's, not this app's build: name the build (or set the buildDir option to the built server folder)`,
        'release-2026-12-01',
      );
    }
    return `build:${await buildHash(dir)}`;
  };
  return {
    affinity,
    shape,
    id: () => {
      id ??= derive().catch((err) => {
        id = undefined;
        throw err;
      });
      return id;
    },
  };
}

/**
 * The first 16 hex digits of the SHA-256 of a build: every file under `dir` but the skipped
 * folders, each as its relative path (with `/`), a NUL, its size, a NUL and its bytes, in path
 * order. A one-byte change of any file changes it; moving the folder does not.
 */
export async function buildHash(dir: string): Promise<string> {
  const files = (await listFiles(dir, '')).sort();
  if (files.length === 0) {
    throw new ConfigError(
      'EVE_WORLD_AWS_DEPLOYMENT_ID',
      `is unset and the build folder ${dir} holds no files to derive it from: name the build`,
      'release-2026-12-01',
    );
  }
  const hash = createHash('sha256');
  for (const rel of files) {
    const bytes = await readFile(path.join(dir, rel));
    hash.update(`${rel}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest('hex').slice(0, 16);
}

async function listFiles(root: string, rel: string): Promise<string[]> {
  const entries = await readdir(path.join(root, rel), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (rel === '' && err.code === 'ENOENT')
      throw new ConfigError(
        'EVE_WORLD_AWS_DEPLOYMENT_ID',
        `is unset and the build folder ${root} does not exist: name the build (or set the buildDir option)`,
        'release-2026-12-01',
      );
    throw err;
  });
  const out: string[] = [];
  for (const e of entries) {
    const child = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) {
      if (!SKIPPED.has(e.name)) out.push(...(await listFiles(root, child)));
    } else if (e.isFile()) {
      out.push(child);
    }
  }
  return out;
}
