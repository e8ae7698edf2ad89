/**
 * The catalogue (src/config/catalogue.ts): every setting of the World is one row of `SETTINGS`,
 * its name unique across the catalogue, every row documented; the parser, the code that takes an
 * option and docs/configuration.md all read it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { channelTable } from '../../../src/config/docs.js';
import {
  type CatalogueEntry,
  CONSUMER_OPTIONS,
  clampToRange,
  loadConfig,
  SETTING_ROWS,
  SETTINGS,
  type SettingChannel,
  SWEEP_OPTIONS,
  TUNING,
  VARIABLES,
  WORLD_OPTIONS,
} from '../../../src/config/index.js';
import { documented } from '../../../src/config/rows.js';
import { ORPHAN_GRACE_MS } from '../../../src/sweep/run-payloads.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

/** Names that more than one row of `rows` carries, each with the rows that do. */
function repeatedNames(rows: readonly CatalogueEntry[]): string[] {
  const by = new Map<string, string[]>();
  for (const r of rows) by.set(r.setting.name, [...(by.get(r.setting.name) ?? []), `${r.channel}.${r.key}`]);
  return [...by].filter(([, at]) => at.length > 1).map(([name, at]) => `${name}: ${at.join(', ')}`);
}

describe('the catalogue of settings', () => {
  it('is composed of every table, every row once', () => {
    expect(SETTINGS).toEqual({
      variables: VARIABLES,
      tuning: TUNING,
      consumer: CONSUMER_OPTIONS,
      world: WORLD_OPTIONS,
      sweep: SWEEP_OPTIONS,
    });
    const count = Object.values(SETTINGS).reduce((n, table) => n + Object.keys(table).length, 0);
    expect(SETTING_ROWS).toHaveLength(count);
    for (const r of SETTING_ROWS) expect((SETTINGS[r.channel] as Record<string, unknown>)[r.key]).toBe(r.setting);
  });

  it('gives every setting a name no other row has', () => {
    expect(repeatedNames(SETTING_ROWS)).toEqual([]);
  });

  it('finds a repeated name (the check can fail)', () => {
    const extra: CatalogueEntry = { channel: 'sweep', key: 'again', setting: SETTINGS.tuning.backstopSeconds };
    expect(repeatedNames([...SETTING_ROWS, extra])).toEqual(['backstopSeconds: tuning.backstopSeconds, sweep.again']);
  });

  it('documents every row: a description, a default (or what unset means), the values, its line on the page', () => {
    const doc = read('docs/configuration.md');
    for (const { channel, key, setting } of SETTING_ROWS) {
      const d = documented(setting);
      const at = `${channel}.${key}`;
      expect(d.description.length, at).toBeGreaterThan(10);
      expect(d.default, at).toBeTruthy();
      expect(d.values, at).toBeTruthy();
      const line = channelTable(channel)
        .split('\n')
        .find((l) => l.startsWith(`| \`${setting.name}\` |`));
      expect(line, at).toBeDefined();
      expect(doc, at).toContain(line);
    }
    for (const channel of Object.keys(SETTINGS) as SettingChannel[])
      expect(doc, channel).toContain(channelTable(channel));
  });
});

describe('the code reads its defaults from the catalogue', () => {
  const source = (f: string) => read(`src/${f}`);

  it('the parser: an empty environment and no tuning give the rows’ defaults', () => {
    const empty = loadConfig({}) as unknown as Record<string, unknown>;
    for (const [key, s] of Object.entries(SETTINGS.tuning)) expect(String(empty[key]), key).toBe(String(s.default));
    expect(empty.consumerConcurrency).toBe(SETTINGS.variables.consumerConcurrency.default);
    expect(empty.prefix).toBe(SETTINGS.variables.prefix.default);
  });

  it('the consumer: waitTimeSeconds is clamped to its row’s range', () => {
    const wait = SETTINGS.consumer.waitTimeSeconds;
    expect([wait.min, wait.max, wait.unit, wait.default]).toEqual([0, 20, 's', 5]);
    expect(wait.values).toBe('0-20 (s; outside, the nearest end)');
    expect(clampToRange(wait, undefined)).toBe(5);
    expect(clampToRange(wait, -3)).toBe(0);
    expect(clampToRange(wait, 7)).toBe(7);
    expect(clampToRange(wait, 90)).toBe(20);
    expect(source('consumer/index.ts')).toContain(
      'clampToRange(CONSUMER_OPTIONS.waitTimeSeconds, options.waitTimeSeconds)',
    );
    expect(source('consumer/index.ts')).not.toMatch(/Math\.min\(\s*20\b/);
  });

  it('createWorld: resolvePayloads is an option of CreateWorldOptions, its default read from the row', () => {
    expect(SETTINGS.world.resolvePayloads.default).toBe(true);
    expect(source('index.ts')).toMatch(/^ {2}resolvePayloads\?: boolean;$/m);
    const context = source('context/world-context.ts');
    expect(context).toContain('SETTINGS.world.resolvePayloads.default');
    expect(context).not.toMatch(/resolvePayloads [!=]== (false|true)/);
  });

  it('the sweep: graceMs and marginMs are options of the sweep, their defaults read from the rows', () => {
    expect(ORPHAN_GRACE_MS).toBe(SETTINGS.sweep.graceMs.default);
    expect(SETTINGS.sweep.graceMs.default).toBe(3_600_000);
    expect(SETTINGS.sweep.marginMs.default).toBe(60_000);
    const payloads = source('sweep/run-payloads.ts');
    const handler = source('sweep/sweep-handler.ts');
    expect(payloads).toMatch(/export interface OrphanSweepOptions \{[^}]*\n {2}graceMs\?: number;/);
    expect(handler).toMatch(/export interface SweepHandlerOptions \{[^}]*\n {2}marginMs\?: number;/);
    expect(payloads).toContain('export const ORPHAN_GRACE_MS = SETTINGS.sweep.graceMs.default;');
    expect(handler).toContain('opts.marginMs ?? SETTINGS.sweep.marginMs.default');
    // No second literal of either default.
    expect(`${payloads}\n${handler}`).not.toMatch(/\b(3_?600_?000|60_?000)\b/);
  });
});
