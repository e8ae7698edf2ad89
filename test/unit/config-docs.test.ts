/**
 * docs/configuration.md carries the tables generated from src/config/ (one per channel of the
 * catalogue, `SETTINGS`, which the parser and the code that takes an option read): stale docs fail here. `npm run docs:config` regenerates them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { channelTable, renderConfigurationDoc } from '../../src/config/docs.js';
import {
  CONSUMER_DOCS,
  ENV_DOCS,
  FORMER_VARIABLES,
  SWEEP_DOCS,
  TOOL_VARIABLES,
  TUNING_DOCS,
  WORLD_DOCS,
} from '../../src/config/index.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

describe('docs/configuration.md', () => {
  const doc = read('docs/configuration.md');

  it('is up to date with src/config/ (run npm run docs:config)', () => {
    expect(renderConfigurationDoc(doc) === doc, 'docs/configuration.md is stale: run npm run docs:config').toBe(true);
  });

  it('has one row per variable and per option, with its default and range from the table', () => {
    for (const d of [...ENV_DOCS, ...TUNING_DOCS, ...CONSUMER_DOCS, ...WORLD_DOCS, ...SWEEP_DOCS])
      expect(doc, d.name).toContain(`| \`${d.name}\` |`);
    expect(channelTable('variables')).toContain('| `EVE_WORLD_AWS_CONCURRENCY` | `8` | 1-1000 |');
    expect(channelTable('variables')).toContain('| `EVE_WORLD_AWS_RETENTION_DAYS` | — | 1-36500 |');
    expect(channelTable('tuning')).toContain('| `streamBurstMs` | `60` | 0-1000 |');
    expect(channelTable('consumer')).toContain('| `drainTimeoutMs` | `30000` | ms |');
    expect(channelTable('consumer')).toContain('| `consumer` | `none` inside AWS Lambda');
    expect(channelTable('consumer')).toContain('| `waitTimeSeconds` | `5` | 0-20 (s; outside, the nearest end) |');
    expect(channelTable('world')).toContain('| `resolvePayloads` | `true` | `true` / `false` |');
    expect(channelTable('sweep')).toContain('| `graceMs` | `3600000` | ms, >= 0 |');
    expect(channelTable('sweep')).toContain('| `marginMs` | `60000` |');
  });

  it('detects a stale table (the check can fail)', () => {
    const stale = doc.replace('| `EVE_WORLD_AWS_CONCURRENCY` | `8` |', '| `EVE_WORLD_AWS_CONCURRENCY` | `16` |');
    expect(stale).not.toBe(doc);
    expect(renderConfigurationDoc(stale)).toBe(doc);
    expect(() => renderConfigurationDoc('no markers here')).toThrow(/missing markers/);
  });

  it('is where the README sends readers for configuration', () => {
    const readme = read('README.md');
    expect(readme).toContain('[docs/configuration.md](docs/configuration.md)');
    expect(readme).not.toMatch(/^\| `EVE_WORLD_AWS_/m); // no second copy of the table
  });
});

describe('no dead variable', () => {
  it('lists every former variable on the page, with the option that replaced it', () => {
    const page = read('docs/configuration.md');
    for (const [name, option] of Object.entries(FORMER_VARIABLES)) {
      const row = page.split('\n').find((l) => l.startsWith('|') && l.includes(`\`${name}\``));
      expect(row, name).toBeDefined();
      expect(row).toContain(`\`${option}\``);
    }
  });

  // The variables the World no longer reads (docs/configuration.md, "What is no longer a variable").
  const FORMER = Object.keys(FORMER_VARIABLES);
  /** Read by the CLI and the tests, not by the World. */
  const TOOLING = TOOL_VARIABLES;
  /** Where a former name may appear: the page that lists them, and the test that they are ignored. */
  const MAY_NAME_FORMER = [
    'src/config/warnings.ts',
    'docs/configuration.md',
    'test/unit/config.test.ts',
    'test/unit/config-docs.test.ts',
  ];

  function unknownNames(files: { path: string; text: string }[]): string[] {
    const known = new Set([...ENV_DOCS.map((d) => d.name), ...TOOLING]);
    const out: string[] = [];
    for (const f of files) {
      for (const m of f.text.matchAll(/EVE_WORLD_AWS_[A-Z0-9_]*[A-Z0-9]/g)) {
        const former = FORMER.includes(m[0]) && MAY_NAME_FORMER.includes(f.path);
        if (!known.has(m[0]) && !former) out.push(`${f.path}: ${m[0]}`);
      }
    }
    return [...new Set(out)];
  }

  it('every EVE_WORLD_AWS_* name in the tracked files is a variable the World reads (or a tooling one)', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|tsx|mjs|js|md|json|yml|sh)$|^\.ci\//.test(f) && existsSync(path.join(ROOT, f)));
    expect(tracked.length).toBeGreaterThan(100);
    expect(unknownNames(tracked.map((p) => ({ path: p, text: read(p) })))).toEqual([]);
  });

  it('finds a dead variable set in a test (the check can fail)', () => {
    const typo = ['EVE', 'WORLD', 'AWS', 'TYPO'].join('_'); // not spelled out: this file is scanned too
    expect(
      unknownNames([
        { path: 'test/x.test.ts', text: "createFixture({ EVE_WORLD_AWS_STREAM_POLL_MS: '10' })" },
        { path: 'docs/configuration.md', text: '`EVE_WORLD_AWS_STREAM_POLL_MS` is an option now' },
        { path: 'README.md', text: `set ${typo}=1` },
      ]),
    ).toEqual(['test/x.test.ts: EVE_WORLD_AWS_STREAM_POLL_MS', `README.md: ${typo}`]);
  });
});

describe('the consumer options', () => {
  it('are every option of CreateConsumerOptions but its callbacks, with the defaults the consumer reads', async () => {
    const source = readFileSync(path.join(ROOT, 'src/consumer/index.ts'), 'utf8');
    const block = source.slice(source.indexOf('export interface CreateConsumerOptions {'));
    const fields = [...block.slice(0, block.indexOf('\n}')).matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1]);
    const callbacks = ['logger', 'onDeliveryOutcome', 'now']; // functions: no row
    expect(fields.filter((f) => !callbacks.includes(f)).sort()).toEqual(CONSUMER_DOCS.map((d) => d.name).sort());
    // No default written a second time in the consumer: each one is read from the table.
    expect(source).not.toMatch(/waitTimeSeconds \?\? \d|drainTimeoutMs \?\? \d|earlyDelivery !== false/);
  });
});
