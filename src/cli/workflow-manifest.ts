/**
 * The app's workflow manifest: the `manifest.json` the Workflow DevKit's build writes beside the
 * flow route, `workflows[<file>][<export>] = { workflowId, graph }`. It names every workflow the
 * app has, so `start <name>` resolves a name before any run of it exists (src/cli/start.ts), and
 * `runs --workflow` can suggest the names an app really has.
 *
 * Where builds put it, searched in each folder from the current one up to the project root (the
 * first folder holding a package.json), in this order ({@link MANIFEST_CANDIDATES}):
 * - `.well-known/workflow/v1/manifest.json`: `wf build` (the standalone builder);
 * - the same under `app/` (also below `src`) or `public/`: Next.js.
 * An eve build (`.output/`) writes none: eve starts its own workflows through its routes.
 *
 * A manifest the user names (`--manifest`) that is missing or unreadable is a usage error (exit 2);
 * one found by the search that is unreadable is named in a warning and skipped.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CliError, EXIT_USAGE } from './shared/output.js';

/** Where builds write the manifest, relative to a project folder (see the header). */
export const MANIFEST_CANDIDATES: readonly string[] = [
  '.well-known/workflow/v1/manifest.json',
  'app/.well-known/workflow/v1/manifest.json',
  'src/app/.well-known/workflow/v1/manifest.json',
  'public/.well-known/workflow/v1/manifest.json',
];

/** One workflow of the app: its file, its export name and the id the runtime records. */
export interface ManifestWorkflow {
  readonly file: string;
  readonly name: string;
  readonly workflowId: string;
}

export interface WorkflowManifest {
  /** Where it was read (absolute). */
  readonly path: string;
  readonly workflows: readonly ManifestWorkflow[];
}

/** The first manifest from `cwd` up to the project root, or undefined. */
export function findManifest(cwd: string = process.cwd()): string | undefined {
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    for (const candidate of MANIFEST_CANDIDATES) {
      const file = path.join(dir, candidate);
      if (existsSync(file)) return file;
    }
    if (existsSync(path.join(dir, 'package.json')) || path.dirname(dir) === dir) return undefined;
  }
}

/** Read and check a manifest; throws a usage error naming the file and what is wrong. */
export function readManifest(file: string): WorkflowManifest {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    throw new CliError(
      `cannot read the workflow manifest ${abs} (${(err as NodeJS.ErrnoException).code ?? String(err)}): ` +
        'pass the manifest.json your build wrote (`wf build`: .well-known/workflow/v1/manifest.json)',
      EXIT_USAGE,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new CliError(`the workflow manifest ${abs} is not JSON (${(err as Error).message})`, EXIT_USAGE);
  }
  const byFile = (parsed as { workflows?: unknown })?.workflows;
  if (!byFile || typeof byFile !== 'object')
    throw new CliError(
      `the workflow manifest ${abs} has no "workflows" object: is it the manifest.json of a Workflow DevKit build?`,
      EXIT_USAGE,
    );
  const workflows: ManifestWorkflow[] = [];
  for (const [file, exports] of Object.entries(byFile as Record<string, unknown>)) {
    if (!exports || typeof exports !== 'object') continue;
    for (const [name, entry] of Object.entries(exports as Record<string, unknown>)) {
      const workflowId = (entry as { workflowId?: unknown })?.workflowId;
      if (typeof workflowId === 'string' && workflowId) workflows.push({ file, name, workflowId });
    }
  }
  return { path: abs, workflows };
}

/**
 * The manifest named by `option`, else the one the search finds from `cwd` (a broken one is named
 * in a warning on stderr and skipped), else undefined.
 */
export function loadManifest(option: string | undefined, cwd: string = process.cwd()): WorkflowManifest | undefined {
  if (option !== undefined) return readManifest(path.resolve(cwd, option));
  const found = findManifest(cwd);
  if (!found) return undefined;
  try {
    return readManifest(found);
  } catch (err) {
    process.stderr.write(`warning: ${(err as Error).message}; skipping it\n`);
    return undefined;
  }
}
