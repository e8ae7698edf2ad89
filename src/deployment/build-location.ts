/**
 * Where the workflow code of this process is: the build a plain Node host's deployment id
 * fingerprints (src/deployment/fingerprint.ts hashes it). Two kinds of build carry the code core
 * loads, each recognised by a file its builder always writes:
 *
 * - a Workflow DevKit bundle: the folder `.well-known/workflow/v1/` holding `manifest.json`, with
 *   `flow.mjs` (core's flow route, the steps and the workflow code in one file), written by `wf
 *   build` under the folder it ran in;
 * - a Nitro server output (what `eve build` writes to `.output/`): the folder holding `nitro.json`,
 *   whose `server/` holds the compiled agent, eve's workflows and this World (eve bundles it).
 *
 * Invariants:
 * - Found from what the process runs, in this order, the first that names a build wins:
 *   1. the `buildDir` option (explicit);
 *   2. the build this module is inside of (eve bundles the World into its server output, so a copy
 *      of `.output` served from anywhere is found by the code itself, whatever the working folder);
 *   3. the build the entry script is inside of (`node .output/server/index.mjs`);
 *   4. a Workflow DevKit bundle at or above the entry script's folder (an app's own server, its
 *      entry script in a folder of its own, imports the bundle relative to itself, at the app's
 *      root);
 *   5. one at or above the working folder (`wf build` writes it under the folder it ran in).
 *   None found: undefined, and the caller refuses with the fix (name the build).
 * - Never the entry script's folder as such, never a folder of logs or caches: only a folder its
 *   builder's own file marks is a build (a `buildDir` that is neither kind is hashed as given, code
 *   files only).
 * - A function handed to `registerHandler` does not say which file it came from (only the inspector
 *   could tell, by enabling the debugger in the process), and core asks this World for its flow
 *   handler only on the first delivery, after runs were already pinned: so the anchors are the
 *   files above, which exist before the first run.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A Workflow DevKit bundle folder, relative to the folder `wf build` ran in. */
const WORKFLOW_BUNDLE_DIR = path.join('.well-known', 'workflow', 'v1');
/** The file `wf build` always writes into the bundle folder. */
const BUNDLE_MARK = 'manifest.json';
/** The file Nitro always writes at the root of its output (`.output/`). */
const NITRO_MARK = 'nitro.json';

export type BuildKind = 'workflow-bundle' | 'nitro-output' | 'folder';

/** How the build was found (in the order above); shown in errors and logs. */
export type BuildAnchor = 'buildDir option' | 'this module' | 'entry script' | 'working folder';

export interface LocatedBuild {
  kind: BuildKind;
  /** The bundle folder, the Nitro output root, or the folder the option names. */
  dir: string;
  foundBy: BuildAnchor;
}

export interface BuildSearch {
  buildDir?: string;
  /** The entry script (`process.argv[1]`). */
  entryScript?: string;
  cwd: string;
  /** This module's own folder (another in tests). */
  moduleDir?: string;
}

const isDir = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/** `dir` itself as a build: a bundle folder or a Nitro output root, else undefined. */
function buildAt(dir: string): Pick<LocatedBuild, 'kind' | 'dir'> | undefined {
  if (dir.endsWith(path.sep + WORKFLOW_BUNDLE_DIR) && existsSync(path.join(dir, BUNDLE_MARK)))
    return { kind: 'workflow-bundle', dir };
  if (existsSync(path.join(dir, NITRO_MARK)) && isDir(path.join(dir, 'server'))) return { kind: 'nitro-output', dir };
  return undefined;
}

/** The Workflow DevKit bundle of app root `dir`, else undefined. */
function bundleOf(dir: string): Pick<LocatedBuild, 'kind' | 'dir'> | undefined {
  const bundle = path.join(dir, WORKFLOW_BUNDLE_DIR);
  return existsSync(path.join(bundle, BUNDLE_MARK)) ? { kind: 'workflow-bundle', dir: bundle } : undefined;
}

/** What `find` finds at the nearest folder at or above `from`, else undefined. */
function nearest(from: string, find: (dir: string) => Pick<LocatedBuild, 'kind' | 'dir'> | undefined) {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const build = find(dir);
    if (build || path.dirname(dir) === dir) return build;
  }
}

/**
 * What the `buildDir` option names: a bundle folder or a Nitro output root as such; an app root
 * holding a bundle; a folder holding `.output/`; Nitro's `server/` folder (the entry script's
 * folder of `eve start`, as earlier releases documented it); else the folder as given.
 */
export function classifyBuildDir(dir: string): Pick<LocatedBuild, 'kind' | 'dir'> {
  const abs = path.resolve(dir);
  return (
    buildAt(abs) ??
    bundleOf(abs) ??
    buildAt(path.join(abs, '.output')) ??
    (path.basename(abs) === 'server' ? buildAt(path.dirname(abs)) : undefined) ?? { kind: 'folder', dir: abs }
  );
}

/** This module's folder: inside the build when a bundler put the World into the server output. */
function ownDir(): string | undefined {
  try {
    return path.dirname(fileURLToPath(import.meta.url));
  } catch {
    return undefined;
  }
}

/** The build of this process (see the invariants above), or undefined when none is found. */
export function locateBuild(search: BuildSearch): LocatedBuild | undefined {
  if (search.buildDir !== undefined) return { ...classifyBuildDir(search.buildDir), foundBy: 'buildDir option' };
  const moduleDir = search.moduleDir ?? ownDir();
  const entryDir = search.entryScript ? path.dirname(path.resolve(search.cwd, search.entryScript)) : undefined;
  const tries: [BuildAnchor, () => Pick<LocatedBuild, 'kind' | 'dir'> | undefined][] = [
    ['this module', () => (moduleDir ? nearest(moduleDir, buildAt) : undefined)],
    ['entry script', () => (entryDir ? nearest(entryDir, buildAt) : undefined)],
    ['entry script', () => (entryDir ? nearest(entryDir, bundleOf) : undefined)],
    ['working folder', () => nearest(search.cwd, bundleOf)],
  ];
  for (const [foundBy, find] of tries) {
    const build = find();
    if (build) return { ...build, foundBy };
  }
  return undefined;
}

/** Where {@link locateBuild} looked, for the error that names the fix. */
export function describeSearch(search: BuildSearch): string {
  const entry = search.entryScript ? path.dirname(path.resolve(search.cwd, search.entryScript)) : undefined;
  return (
    `no ${path.join(WORKFLOW_BUNDLE_DIR, BUNDLE_MARK)} (written by \`wf build\`) at or above ` +
    `${entry ? `the entry script's folder ${entry} or ` : ''}the working folder ${search.cwd}, ` +
    `and no Nitro output (\`.output/${NITRO_MARK}\`, written by \`eve build\`) around this World or the entry script`
  );
}
