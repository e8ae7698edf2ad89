/**
 * The build fingerprint (src/deployment/fingerprint.ts) on files laid out as each builder writes
 * them: what counts, what is rewritten, what never moves it. Real `wf build` and `eve build` output
 * is fingerprinted in test/e2e/deployment-identity.test.ts and test/eve/identity.test.ts.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eveFacts, fingerprintBuild } from '../../../src/deployment/fingerprint.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'eve-fp-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function write(dir: string, files: Record<string, string | Buffer>): string {
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), body);
  }
  return dir;
}

const bundleFiles = {
  'flow.mjs': 'export const POST = async () => "step a then b";',
  'manifest.json': '{"workflows":{}}',
  'webhook.mjs': 'export const POST = 1;',
  '__step_registrations.mjs': 'import "workflow/internal/builtins";',
};
const bundle = (name: string, files: Record<string, string | Buffer>) => ({
  kind: 'workflow-bundle' as const,
  dir: write(path.join(scratch, name, '.well-known/workflow/v1'), files),
});

describe('a Workflow DevKit bundle', () => {
  it('is its code files: any byte of them moves it; debug listings, logs and the folder it sits in do not', async () => {
    const a = await fingerprintBuild(bundle('a', bundleFiles));
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(await fingerprintBuild(bundle('elsewhere/deeper', bundleFiles))).toBe(a);
    // The builder's listings of its inputs hold absolute paths and are never loaded.
    const listed = bundle('listed', {
      ...bundleFiles,
      'flow.mjs.__wf_tmp.js.debug.json': '{"workflowFiles":["/home/ci/build-17/workflows/a.ts"]}',
      '__step_registrations.mjs.debug.json': '{"stepFiles":[]}',
      'server.log': 'GET / 200',
      'notes.txt': 'x',
    });
    expect(await fingerprintBuild(listed)).toBe(a);
    const oneByte = { ...bundleFiles, 'flow.mjs': 'export const POST = async () => "step b then a";' };
    expect(await fingerprintBuild(bundle('b', oneByte))).not.toBe(a);
    expect(await fingerprintBuild(bundle('m', { ...bundleFiles, 'manifest.json': '{"workflows":{"x":1}}' }))).not.toBe(
      a,
    );
    // A file moved is another build, though its bytes are the same.
    const { 'webhook.mjs': webhook, ...rest } = bundleFiles;
    expect(await fingerprintBuild(bundle('moved', { ...rest, 'hooks/webhook.mjs': webhook }))).not.toBe(a);
  });

  it('a folder with no code file is refused', async () => {
    await expect(fingerprintBuild(bundle('empty', { 'a.log': 'x' }))).rejects.toThrow(/holds no code files/);
    await expect(fingerprintBuild({ kind: 'workflow-bundle', dir: path.join(scratch, 'nowhere') })).rejects.toThrow(
      /does not exist/,
    );
  });
});

/** An eve build's `.output`, as `eve build` lays it out, built from `appRoot` with scratch folder `run`. */
function eveOutput(name: string, appRoot: string, run: string, tool = 'return { sum: a + b };'): string {
  const scope = createHash('sha256').update(appRoot).digest('hex').slice(0, 16);
  const discovery = `${JSON.stringify({ appRoot, agentRoot: `${appRoot}/agent`, tools: ['tools/add.ts'] }, null, 2)}\n`;
  const compiled = `${JSON.stringify({ sourcePath: `${appRoot}/agent/tools/add.ts` }, null, 2)}\n`;
  const moduleMap = 'import * as m from "../../../agent/tools/add.ts";\n';
  const diagnostics = '{"diagnostics":[]}\n';
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const [n, r, i, m] = [sha(compiled), sha(discovery), sha(diagnostics), sha(moduleMap)];
  const graph = sha(`${n}:${r}:${i}:${m}`);
  const metadata = {
    compile: {
      manifest: { path: '.output/.eve/compile/compiled-agent-manifest.json', sha256: n },
      moduleMap: { path: '.output/.eve/compile/module-map.mjs', sha256: m },
    },
    discovery: {
      diagnostics: { path: '.output/.eve/discovery/diagnostics.json', sha256: i },
      manifest: { path: '.output/.eve/discovery/agent-discovery-manifest.json', sha256: r },
      sourceGraphHash: graph,
    },
  };
  return write(path.join(scratch, name, '.output'), {
    'nitro.json': `{"date":"${new Date().toISOString()}","preset":"node-server"}`,
    'public/favicon.ico': 'icon',
    'server/index.mjs': 'import "./_chunks/node-server.mjs";',
    'server/_chunks/node-server.mjs': [
      `// .eve/builds/${run}/host/compiled-artifacts-module-map.mjs`,
      `async function exec({ a, b }) { ${tool} }`,
      `const artifacts = { "appRoot": "${appRoot}", "sandboxScope": "${scope}" };`,
      `const metadata = { "manifest": "${n}", "moduleMap": "${m}", "diagnostics": "${i}", "discovery": "${r}", "sourceGraphHash": "${graph}" };`,
    ].join('\n'),
    'server/_chunks/storage.mjs': `const meta = { "etag": "\\"19-abc\\"", "mtime": "${new Date().toISOString()}" };`,
    'server/_virtual/skills.json.mjs': `// virtual:nitro:raw:${appRoot}/.eve/builds/${run}/nitro/skills.json.js`,
    'server/node_modules/dep/index.js': 'module.exports = 1;',
    'server/node_modules/dep/README.md': 'docs',
    '.eve/discovery/agent-discovery-manifest.json': discovery,
    '.eve/discovery/diagnostics.json': diagnostics,
    '.eve/compile/compiled-agent-manifest.json': compiled,
    '.eve/compile/module-map.mjs': moduleMap,
    '.eve/compile/compile-metadata.json': `${JSON.stringify(metadata, null, 2)}\n`,
  });
}

describe("eve's Nitro output", () => {
  it('one source built twice, in two folders: one fingerprint (scratch name, asset times, app root and what eve derives from it rewritten)', async () => {
    const x = eveOutput('x', '/srv/ci/run-1/app', 'mx9it2k9-60180809');
    const y = eveOutput('y', '/home/dev/checkouts/app', 'mx9ituse-cd0cceaf');
    const facts = await eveFacts(x);
    expect(facts.appRoot).toBe('/srv/ci/run-1/app');
    expect([...facts.derived.values()].sort()).toEqual([
      '<sha256 of .eve/compile/compiled-agent-manifest.json>',
      '<sha256 of .eve/compile/module-map.mjs>',
      '<sha256 of .eve/discovery/agent-discovery-manifest.json>',
      '<sha256 of .eve/discovery/diagnostics.json>',
      '<sourceGraphHash>',
    ]);
    const fx = await fingerprintBuild({ kind: 'nitro-output', dir: x });
    expect(await fingerprintBuild({ kind: 'nitro-output', dir: y })).toBe(fx);
    // Files a running app may write beside the build, and what is not code, never count.
    write(x, { 'server/app.log': 'GET / 200', 'server/.cache/x.json': '{}', 'public/extra.js': 'x' });
    expect(await fingerprintBuild({ kind: 'nitro-output', dir: x })).toBe(fx);
  });

  it('two builds whose tool differs: two fingerprints', async () => {
    const a = eveOutput('ta', '/srv/app', 'r1');
    const b = eveOutput('tb', '/srv/app', 'r1', 'return { sum: a + b + 1000 };');
    expect(await fingerprintBuild({ kind: 'nitro-output', dir: b })).not.toBe(
      await fingerprintBuild({ kind: 'nitro-output', dir: a }),
    );
  });

  it('a compile file that changed is counted, and a hash the metadata does not back is hashed as it is', async () => {
    const a = eveOutput('ca', '/srv/app', 'r1');
    const fa = await fingerprintBuild({ kind: 'nitro-output', dir: a });
    const changed = eveOutput('cb', '/srv/app', 'r1');
    write(changed, { '.eve/compile/module-map.mjs': 'import * as m from "../../../agent/tools/other.ts";\n' });
    // The bundle still names the old module map's hash, which no longer matches the file: not rewritten.
    expect((await eveFacts(changed)).derived.size).toBeLessThan(5);
    expect(await fingerprintBuild({ kind: 'nitro-output', dir: changed })).not.toBe(fa);
  });

  it('bytes that are not UTF-8 are hashed as they are: two such files never merge', async () => {
    const a = eveOutput('ba', '/srv/app', 'r1');
    const b = eveOutput('bb', '/srv/app', 'r1');
    write(a, { 'server/_libs/bin.mjs': Buffer.from([0x2f, 0x2f, 0xff, 0xfe]) });
    write(b, { 'server/_libs/bin.mjs': Buffer.from([0x2f, 0x2f, 0xff, 0xfd]) });
    expect(await fingerprintBuild({ kind: 'nitro-output', dir: a })).not.toBe(
      await fingerprintBuild({ kind: 'nitro-output', dir: b }),
    );
  });
});

describe('a plain folder (the buildDir option naming neither kind)', () => {
  it('is its code files: node_modules, dot-folders and logs are not', async () => {
    const files = { 'index.mjs': 'export {}', 'chunks/a.mjs': 'step a', 'src/x.ts': 'export const x = 1' };
    const a = write(path.join(scratch, 'fa'), files);
    const fa = await fingerprintBuild({ kind: 'folder', dir: a });
    write(a, { 'node_modules/x/i.js': 'dep', '.eve/state.json': '{}', '.git/HEAD': 'ref', 'server.log': 'x' });
    expect(await fingerprintBuild({ kind: 'folder', dir: a })).toBe(fa);
    const b = write(path.join(scratch, 'fb'), { ...files, 'chunks/a.mjs': 'step b' });
    expect(await fingerprintBuild({ kind: 'folder', dir: b })).not.toBe(fa);
  });
});
