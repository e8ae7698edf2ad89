/**
 * Packs this repository with `npm pack` and installs the tarball into an empty project OFFLINE,
 * the way a user's `npm install @portfolio/eve-world-aws` would lay it out.
 *
 * Why a lock file: `npm install --offline <tarball>` needs every dependency's registry metadata
 * (packument) in the npm cache, but `npm ci` caches only tarballs (by integrity), so a plain
 * `--offline` install fails with ENOTCACHED on a clean CI machine. Instead we write the empty
 * project's package-lock.json from this repository's lock: the tarball plus the part of the tree
 * that its dependencies (and the requested optional peers) reach, at the versions the repository
 * tested. `npm ci --offline` then takes every tarball from the cache; nothing touches the network.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  optional?: boolean;
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  [k: string]: unknown;
}

interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  bin?: Record<string, string>;
  [k: string]: unknown;
}

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** `npm pack` into `dest`; returns the tarball path. `--ignore-scripts`: dist/ must already be built. */
export function packRepo(dest: string): string {
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dest], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [info] = JSON.parse(out) as Array<{ filename: string }>;
  return path.join(dest, info.filename);
}

/** Where node would find `name` when required from the package at `from` (a lock key), or undefined. */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const key = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (packages[key]) return key;
    if (!dir) return undefined;
    const i = dir.lastIndexOf('/node_modules/');
    dir = i < 0 ? '' : dir.slice(0, i);
  }
}

/**
 * The lock file of a project whose only dependencies are the tarball (`file:<tarballName>`, copied
 * into the project) and `extra` (names of packages in this repository's lock, at its versions).
 */
export function lockFor(
  tarballName: string,
  pkg: PackageJson,
  extra: string[],
  repoRoot = REPO_ROOT,
): { packageJson: object; lock: object } {
  const repoLock = readJson<{ packages: Record<string, LockEntry> }>(path.join(repoRoot, 'package-lock.json'));
  const source = repoLock.packages;
  const rootDeps: Record<string, string> = { [pkg.name]: `file:${tarballName}` };
  for (const name of extra) {
    const entry = source[`node_modules/${name}`];
    if (!entry?.version) throw new Error(`${name} is not in package-lock.json; cannot install it offline`);
    rootDeps[name] = entry.version;
  }
  const self = `node_modules/${pkg.name}`;
  const packages: Record<string, LockEntry> = {
    '': { name: 'eve-world-aws-install-test', version: '1.0.0', dependencies: rootDeps },
    [self]: {
      version: pkg.version,
      resolved: `file:${tarballName}`,
      // npm ci links bins from the lock entry, not from the unpacked package.json.
      bin: pkg.bin,
      dependencies: pkg.dependencies,
      peerDependencies: pkg.peerDependencies,
      peerDependenciesMeta: pkg.peerDependenciesMeta,
    },
  };
  // Walk the dependency edges through the repository's tree; copy every entry reached.
  const queue: Array<[string, string, boolean]> = [];
  const edges = (from: string, e: LockEntry) => {
    const optionalPeer = (n: string) => e.peerDependenciesMeta?.[n]?.optional === true;
    for (const n of Object.keys(e.dependencies ?? {})) queue.push([from, n, false]);
    for (const n of Object.keys(e.optionalDependencies ?? {})) queue.push([from, n, true]);
    for (const n of Object.keys(e.peerDependencies ?? {})) if (!optionalPeer(n)) queue.push([from, n, false]);
  };
  edges(self, packages[self]);
  for (const n of extra) queue.push(['', n, false]);
  for (let next = queue.shift(); next; next = queue.shift()) {
    const [from, name, optional] = next;
    const key = from === self ? resolveIn(source, '', name) : resolveIn(source, from, name);
    if (!key) {
      if (optional) continue; // e.g. another platform's binary that the lock does not list
      throw new Error(`${name} (needed by ${from || 'the project'}) is not in package-lock.json`);
    }
    if (packages[key]) continue;
    const { dev, devOptional, peer, ...entry } = source[key];
    packages[key] = entry;
    edges(key, entry);
  }
  return {
    packageJson: { name: 'eve-world-aws-install-test', version: '1.0.0', private: true, dependencies: rootDeps },
    lock: { name: 'eve-world-aws-install-test', version: '1.0.0', lockfileVersion: 3, requires: true, packages },
  };
}

/**
 * Installs `tarball` (+ `extra` packages from this repository's lock) into the empty directory
 * `dir` with `npm ci --offline`, versions from `repoRoot`'s lock file. Throws with npm's output when the install fails.
 */
export function installOffline(dir: string, tarball: string, extra: string[] = [], repoRoot = REPO_ROOT): void {
  const name = path.basename(tarball);
  copyFileSync(tarball, path.join(dir, name));
  // The package.json as packed (npm pack may normalise it), not the working copy's.
  const pkg = JSON.parse(
    execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
  ) as PackageJson;
  const { packageJson, lock } = lockFor(name, pkg, extra, repoRoot);
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(packageJson, null, 2)}\n`);
  writeFileSync(path.join(dir, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
  try {
    execFileSync('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, npm_config_update_notifier: 'false' },
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`npm ci --offline failed in ${dir}:\n${e.stderr || e.stdout || e.message}`);
  }
}

/** Bytes under `dir` (files only, hard links counted once per path like `du -sb --apparent-size`). */
export function directoryBytes(dir: string): number {
  const out = execFileSync('du', ['-sb', dir], { encoding: 'utf8' });
  return Number(out.split('\t')[0]);
}
