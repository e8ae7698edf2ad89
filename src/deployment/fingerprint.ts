/**
 * The fingerprint of a build (src/deployment/build-location.ts finds it): what a plain Node host's
 * deployment id is made of (`build:<fingerprint>`), and what the registry stores beside an id set
 * by hand, so two builds under one id are told apart (src/deployment/registry.ts).
 *
 * Invariants:
 * - It covers the code core loads and nothing else: the code files of the build (`.mjs`, `.js`,
 *   `.cjs`, `.json`, `.wasm`, `.node`, and TypeScript in a plain folder), each as its path relative
 *   to the build and its bytes. Of a Workflow DevKit bundle, every such file of
 *   `.well-known/workflow/v1/` but the builder's `*.debug.json` listings (absolute paths, never
 *   loaded); of a Nitro output, every such file under `server/` (the bundle and its traced
 *   `node_modules`) and eve's compile files (`.eve/discovery/`, `.eve/compile/`), never
 *   `nitro.json` (its build date) nor `public/`. No log, cache or dot-folder (`.eve`, `.git`,
 *   `.swc`, ...) of a plain folder or of `server/` counts, so nothing a running app writes moves
 *   it.
 * - One source built twice, in two folders of the same layout (the app beside its own
 *   `node_modules`, as a checkout is), gets one fingerprint. `wf build` writes the same bytes there
 *   (its module comments are paths relative to the app; it orders modules by absolute path, so an
 *   app moved to another depth against a shared `node_modules` may bundle in another order and get
 *   another fingerprint: never one build's two). `eve build` (0.80.1) writes five things that
 *   differ between two builds of one source, rewritten before hashing and nothing else: its scratch
 *   folder's random name (`.eve/builds/<random>/` in module comments), Nitro's asset times
 *   (`"mtime": "<ISO date>"`), the app root it built from (the `appRoot` of its discovery manifest,
 *   `.output/.eve/discovery/agent-discovery-manifest.json`), the sandbox scope eve names after it
 *   (`"sandboxScope": "<16 hex of its SHA-256>"`), and the SHA-256s of its compile files (which
 *   name the app root) that it embeds in the bundle: each replaced by the name of its file, whose
 *   normalised content is hashed instead, only where the file found matches it. An eve that writes
 *   another such value gets two fingerprints for one source, never one for two builds.
 * - Two builds whose code differs anywhere else get different fingerprints (SHA-256 of every file's
 *   path, size and normalised bytes, in path order; the first 16 hex digits, 64 bits).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../config/index.js';
import { describeSearch, type LocatedBuild, locateBuild } from './build-location.js';

/** Files Node loads as code or data of a build. */
const CODE = /\.(?:mjs|cjs|js|json|wasm|node)$/;
/** A plain folder may also be run as TypeScript (type stripping, tsx). */
const CODE_OR_TYPESCRIPT = /\.(?:mjs|cjs|js|json|wasm|node|mts|cts|ts|tsx|jsx)$/;
/** Text files, normalised before hashing (the rest is hashed as is). */
const TEXT = /\.(?:mjs|cjs|js|json|mts|cts|ts|tsx|jsx)$/;
/** The Workflow DevKit builder's listings of its inputs (absolute paths; never loaded). */
const DEBUG_LISTING = /\.debug\.json$/;

/** eve's per-build scratch folder, named anew by every `eve build`, as module comments name it. */
const EVE_SCRATCH = /\.eve\/builds\/[A-Za-z0-9_-]+\//g;
/** eve's compile metadata: hashes of its other compile files (derived, see {@link eveFacts}). */
const EVE_COMPILE_METADATA = '.eve/compile/compile-metadata.json';
/** Nitro's server-asset metadata: the asset file's modification time. */
const ASSET_MTIME = /"mtime": "\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z"/g;

class BuildFingerprintError extends Error {
  override readonly name = 'BuildFingerprintError';
}

/** The files of `build` that count, relative to its folder (with `/`). */
async function codeFiles(build: Pick<LocatedBuild, 'kind' | 'dir'>): Promise<string[]> {
  switch (build.kind) {
    case 'workflow-bundle':
      return (await walk(build.dir, '', () => true)).filter((f) => CODE.test(f) && !DEBUG_LISTING.test(f));
    case 'nitro-output': {
      const server = (await walk(build.dir, 'server', (name) => !name.startsWith('.'))).filter((f) => CODE.test(f));
      const eve = (await walk(build.dir, '.eve', (name) => name === 'discovery' || name === 'compile')).filter(
        (f) => /^\.eve\/(?:discovery|compile)\/[^/]+$/.test(f) && CODE.test(f) && f !== EVE_COMPILE_METADATA,
      );
      return [...server, ...eve];
    }
    case 'folder':
      return (await walk(build.dir, '', (name) => name !== 'node_modules' && !name.startsWith('.'))).filter((f) =>
        CODE_OR_TYPESCRIPT.test(f),
      );
  }
}

async function walk(root: string, rel: string, enter: (name: string) => boolean): Promise<string[]> {
  const entries = await readdir(path.join(root, rel), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') throw err;
    if (rel === '') throw new BuildFingerprintError(`the build folder ${root} does not exist`);
    return [];
  });
  const out: string[] = [];
  for (const e of entries) {
    const child = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) {
      if (enter(e.name)) out.push(...(await walk(root, child, enter)));
    } else if (e.isFile()) {
      out.push(child);
    }
  }
  return out;
}

/** What an eve build says about itself: the app root it was built from, and values derived from files. */
export interface EveFacts {
  appRoot?: string;
  /** A literal in the bundle (a SHA-256 of one of eve's compile files) and what it stands for. */
  derived: Map<string, string>;
}

const readJson = async (file: string): Promise<Record<string, unknown> | undefined> => {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

/**
 * The facts of the eve build in Nitro output `dir` (none for another Nitro app). eve embeds its
 * compile metadata in the bundle: the SHA-256 of each compile file (which name the app root) and
 * their combined `sourceGraphHash`. Each is replaced by the name of the file it hashes, whose
 * normalised content is hashed in its place, but only where the metadata matches the file found.
 */
export async function eveFacts(dir: string): Promise<EveFacts> {
  const discovery = await readJson(path.join(dir, '.eve', 'discovery', 'agent-discovery-manifest.json'));
  const appRoot =
    typeof discovery?.appRoot === 'string' && discovery.appRoot.length > 1 ? discovery.appRoot : undefined;
  const derived = new Map<string, string>();
  const metadata = await readJson(path.join(dir, EVE_COMPILE_METADATA));
  const entries: unknown[] = [];
  for (const section of ['compile', 'discovery'] as const) {
    const part = metadata?.[section];
    if (part && typeof part === 'object') entries.push(...Object.values(part));
  }
  let verified = 0;
  for (const entry of entries) {
    const { path: rel, sha256 } = (entry ?? {}) as { path?: unknown; sha256?: unknown };
    if (typeof rel !== 'string' || typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) continue;
    const at = rel.indexOf('.eve/');
    if (at < 0) continue;
    const bytes = await readFile(path.join(dir, rel.slice(at))).catch(() => undefined);
    if (!bytes || createHash('sha256').update(bytes).digest('hex') !== sha256) continue;
    derived.set(sha256, `<sha256 of ${rel.slice(at)}>`);
    verified += 1;
  }
  const graph = (metadata?.discovery as { sourceGraphHash?: unknown } | undefined)?.sourceGraphHash;
  if (typeof graph === 'string' && /^[0-9a-f]{64}$/.test(graph) && verified === 4)
    derived.set(graph, '<sourceGraphHash>');
  return { ...(appRoot ? { appRoot } : {}), derived };
}

/**
 * The rewrites applied to a text file of a Nitro output before hashing (see the invariants; the
 * bytes of other builds are hashed as they are). Bytes map to characters one to one (latin1), so
 * no byte sequence is lost or merged with another by decoding.
 */
function normaliser(facts: EveFacts): (bytes: Buffer) => Buffer {
  const literals = [...facts.derived];
  if (facts.appRoot) {
    literals.unshift([Buffer.from(facts.appRoot, 'utf8').toString('latin1'), '<appRoot>']);
    // eve names the sandbox's cache scope after the app root: the first 16 hex digits of its
    // SHA-256.
    const scope = createHash('sha256').update(facts.appRoot).digest('hex').slice(0, 16);
    literals.push([`"${scope}"`, '"<appRoot scope>"']);
  }
  return (bytes) => {
    let text = bytes.toString('latin1');
    for (const [from, to] of literals) if (text.includes(from)) text = text.split(from).join(to);
    text = text.replace(EVE_SCRATCH, '.eve/builds/<build>/').replace(ASSET_MTIME, '"mtime": ""');
    return Buffer.from(text, 'latin1');
  };
}

/**
 * The fingerprint of `build`: 16 hex digits (see the invariants). Throws
 * {@link BuildFingerprintError} when the folder is missing or holds no code file.
 */
export async function fingerprintBuild(build: Pick<LocatedBuild, 'kind' | 'dir'>): Promise<string> {
  // Path order (code point), never the directory's: readdir's order differs between file systems.
  const files = (await codeFiles(build)).sort();
  if (files.length === 0) throw new BuildFingerprintError(`the build folder ${build.dir} holds no code files`);
  const normalise = build.kind === 'nitro-output' ? normaliser(await eveFacts(build.dir)) : undefined;
  const hash = createHash('sha256').update(`${build.kind}\0`);
  for (const rel of files) {
    const raw = await readFile(path.join(build.dir, rel));
    const bytes = normalise && TEXT.test(rel) ? normalise(raw) : raw;
    hash.update(`${rel}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest('hex').slice(0, 16);
}

/** The build of a plain Node host and its fingerprint, or why there is none. */
export type NodeBuild = { build: LocatedBuild; fingerprint: string } | { missing: string };

/** The build this process runs (src/deployment/build-location.ts) and its fingerprint. */
export async function nodeBuild(buildDir: string | undefined, entryScript: string | undefined): Promise<NodeBuild> {
  const search = { buildDir, entryScript, cwd: process.cwd() };
  const build = locateBuild(search);
  if (!build) return { missing: describeSearch(search) };
  try {
    return { build, fingerprint: await fingerprintBuild(build) };
  } catch (err) {
    if (err instanceof BuildFingerprintError) return { missing: `${err.message} (found by the ${build.foundBy})` };
    throw err;
  }
}

/** `build:<fingerprint>`, or the ConfigError that names the fix when no build was found. */
export function buildDeploymentId(found: NodeBuild, byOption: boolean): string {
  if ('fingerprint' in found) return `build:${found.fingerprint}`;
  if (byOption) throw new ConfigError('tuning.buildDir', `names no build: ${found.missing}`, "'.output'");
  throw new ConfigError(
    'EVE_WORLD_AWS_DEPLOYMENT_ID',
    `is unset and no workflow build was found to derive it from (${found.missing}): run the app from the folder \`wf build\` ran in, point the buildDir option at it, or name the build`,
    'release-2026-12-01',
  );
}
