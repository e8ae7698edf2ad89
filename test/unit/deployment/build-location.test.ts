/**
 * Where a plain Node host's build is (src/deployment/build-location.ts): each anchor in its order,
 * and what the `buildDir` option may name. Files in a temp folder.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { classifyBuildDir, describeSearch, locateBuild } from '../../../src/deployment/build-location.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'eve-loc-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function write(dir: string, files: Record<string, string>): string {
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), body);
  }
  return dir;
}

const v1 = path.join('.well-known', 'workflow', 'v1');
const wdkApp = (name: string) =>
  write(path.join(scratch, name), {
    [path.join(v1, 'manifest.json')]: '{}',
    [path.join(v1, 'flow.mjs')]: 'export {}',
    'server/main.mjs': 'main',
  });
const eveOutput = (name: string) =>
  write(path.join(scratch, name), {
    'nitro.json': '{}',
    'server/index.mjs': 'x',
    'server/_chunks/node-server.mjs': 'y',
  });
/** A folder no build is in (this module's own stand-in when it is not bundled into one). */
const nowhere = write(path.join(scratch, 'nowhere'), { 'x.txt': '' });

describe('locateBuild', () => {
  it("an app's own server whose entry script sits outside the bundle folder: the bundle at the app's root", () => {
    const app = wdkApp('own-server');
    const found = locateBuild({ entryScript: path.join(app, 'server/main.mjs'), cwd: nowhere, moduleDir: nowhere });
    expect(found).toEqual({ kind: 'workflow-bundle', dir: path.join(app, v1), foundBy: 'entry script' });
    // Run from elsewhere by a tool: the working folder's bundle.
    expect(
      locateBuild({ entryScript: path.join(nowhere, 'tool.mjs'), cwd: path.join(app, 'server'), moduleDir: nowhere }),
    ).toEqual({
      kind: 'workflow-bundle',
      dir: path.join(app, v1),
      foundBy: 'working folder',
    });
  });

  it('eve: the Nitro output the World is bundled into wins over the working folder (a copy served from anywhere)', () => {
    const copy = eveOutput('copies/build-A');
    const app = wdkApp('cwd-app');
    expect(
      locateBuild({
        entryScript: path.join(copy, 'server/index.mjs'),
        cwd: app,
        moduleDir: path.join(copy, 'server/_chunks'),
      }),
    ).toEqual({ kind: 'nitro-output', dir: copy, foundBy: 'this module' });
    // Not bundled (the World in node_modules): the output the entry script is inside of.
    expect(locateBuild({ entryScript: path.join(copy, 'server/index.mjs'), cwd: app, moduleDir: nowhere })).toEqual({
      kind: 'nitro-output',
      dir: copy,
      foundBy: 'entry script',
    });
  });

  it('never the entry script folder as such: no marker, no build', () => {
    const bare = write(path.join(scratch, 'bare'), { 'server/main.mjs': 'main', 'server/app.log': 'x' });
    const search = { entryScript: path.join(bare, 'server/main.mjs'), cwd: bare, moduleDir: nowhere };
    expect(locateBuild(search)).toBeUndefined();
    expect(describeSearch(search)).toMatch(
      /^no \.well-known\/workflow\/v1\/manifest\.json \(written by `wf build`\) at or above the entry script's folder .*bare\/server or the working folder .*bare, and no Nitro output/,
    );
  });

  it('the buildDir option: a bundle folder, an app root, an eve output (or its server/, or its parent), else the folder as given', () => {
    const app = wdkApp('opt-app');
    const out = eveOutput('opt-eve/.output');
    const found = (dir: string) => locateBuild({ buildDir: dir, cwd: nowhere, moduleDir: nowhere });
    expect(found(path.join(app, v1))).toEqual({
      kind: 'workflow-bundle',
      dir: path.join(app, v1),
      foundBy: 'buildDir option',
    });
    expect(found(app)?.dir).toBe(path.join(app, v1));
    expect(found(out)).toMatchObject({ kind: 'nitro-output', dir: out });
    expect(found(path.join(out, 'server'))).toMatchObject({ kind: 'nitro-output', dir: out });
    expect(found(path.dirname(out))).toMatchObject({ kind: 'nitro-output', dir: out });
    expect(classifyBuildDir(nowhere)).toEqual({ kind: 'folder', dir: nowhere });
  });
});
