/**
 * The version tells the truth (issue 43): package.json, `eve-world-aws --version`, the tarball
 * name (test/package/installed.test.ts checks the one `npm pack` makes), the README's install line and every lock file that names this package all say
 * the CHANGELOG's top entry; every entry after the first opens with what a user must do and an
 * "Upgrading from <the entry below>" checklist; and the previous release the upgrade test builds
 * (test/helpers/builds.ts) is that entry below, by its own package.json.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { PREVIOUS_REF } from '../helpers/builds.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { name: string; version: string };

/** The CHANGELOG's entries, newest first: version and body. */
function entries(): Array<{ version: string; body: string }> {
  const parts = read('CHANGELOG.md').split(/^## /m).slice(1);
  return parts.map((p) => {
    const [heading, ...rest] = p.split('\n');
    const version = /^(\d+\.\d+\.\d+)(?: \(unreleased\))?$/.exec(heading.trim())?.[1];
    if (!version) throw new Error(`CHANGELOG heading "${heading}" is not "<x.y.z>" or "<x.y.z> (unreleased)"`);
    return { version, body: rest.join('\n') };
  });
}

describe('the version', () => {
  const [top, previous] = entries();

  it("package.json's version is the CHANGELOG's top entry, and --version prints it", () => {
    expect(pkg.version).toBe(top.version);
    expect(buildProgram().version()).toBe(pkg.version);
  });

  it("the README installs the tarball by its name (npm's: scope-name-version; test/package checks npm pack's)", () => {
    const filename = `${pkg.name.replace(/^@/, '').replace('/', '-')}-${pkg.version}.tgz`;
    expect(filename).toBe(`portfolio-eve-world-aws-${top.version}.tgz`);
    const readme = read('README.md');
    expect(readme).toContain(`npm i ../eve-world-aws/${filename}`);
    expect(readme.match(/portfolio-eve-world-aws-[\d.]+\.tgz/g)).toEqual([filename]);
  });

  it('every lock file that links this package names the same version', () => {
    const root = JSON.parse(read('package-lock.json')) as {
      version: string;
      packages: Record<string, { version: string }>;
    };
    expect(root.version).toBe(pkg.version);
    expect(root.packages[''].version).toBe(pkg.version);
    for (const [lock, key] of [
      ['examples/lambda/package-lock.json', '../..'],
      ['test/eve/app/package-lock.json', '../../..'],
    ]) {
      const linked = (JSON.parse(read(lock)) as { packages: Record<string, { name?: string; version: string }> })
        .packages[key];
      expect({ lock, name: linked.name, version: linked.version }).toEqual({
        lock,
        name: pkg.name,
        version: pkg.version,
      });
    }
  });

  it('each entry after the first opens with what a user must do, then an "Upgrading from" checklist', () => {
    const all = entries();
    for (let i = 0; i < all.length - 1; i++) {
      const { version, body } = all[i];
      const from = all[i + 1].version;
      expect(body.trimStart(), version).toMatch(/^\*\*What you must do\.\*\*/);
      const checklist = body.split(`### Upgrading from ${from}\n`)[1];
      expect(checklist, `${version} has no "### Upgrading from ${from}"`).toBeDefined();
      expect(checklist.trimStart()).toMatch(/^1\. \S[\s\S]*\n2\. \S/);
      // The checklist comes right after "what you must do", before what is new.
      expect(body.indexOf('### Upgrading from')).toBeLessThan(body.search(/^### (?!Upgrading)/m));
    }
  });

  it('the previous release the upgrade test builds is the entry below the top one', () => {
    const theirs = JSON.parse(
      execFileSync('git', ['show', `${PREVIOUS_REF}:package.json`], { cwd: ROOT, encoding: 'utf8' }),
    ) as { version: string };
    expect(theirs.version).toBe(previous.version);
    expect(top.body).toContain(`\`${PREVIOUS_REF}\``);
  });
});
