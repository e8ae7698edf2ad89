import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findPackageRoot, PACKAGE_NAME, packageRoot } from '../../../src/util/package-root.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');

describe('packageRoot', () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'package-root-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('is this checkout, from a module of src/', () => {
    expect(packageRoot()).toBe(ROOT);
  });

  it('finds the package from any depth (source and dist/ sit at different depths), past other packages', () => {
    // <tmp>/pkg is this package; <tmp>/pkg/node_modules/dep another package on the way up.
    const pkg = path.join(tmp, 'pkg');
    const deep = path.join(pkg, 'node_modules', 'dep', 'dist', 'src', 'cli');
    mkdirSync(deep, { recursive: true });
    writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: PACKAGE_NAME }));
    writeFileSync(path.join(pkg, 'node_modules', 'dep', 'package.json'), JSON.stringify({ name: 'dep' }));
    writeFileSync(path.join(pkg, 'node_modules', 'dep', 'dist', 'package.json'), '{ not json');
    expect(findPackageRoot(deep)).toBe(pkg);
    expect(findPackageRoot(pkg)).toBe(pkg);
  });

  it('says where it looked when no package.json above names this package', () => {
    const lone = path.join(tmp, 'lone', 'a');
    mkdirSync(lone, { recursive: true });
    expect(() => findPackageRoot(lone)).toThrow(/no package.json of @portfolio\/eve-world-aws above .*lone/);
  });
});
