/**
 * Names as users type them (src/cli/workflow-names.ts, src/cli/workflow-manifest.ts): the near
 * names a typo gets, the hint `runs --workflow` prints, and the manifest search and checks on
 * files in a temporary folder. The CLI against a real `wf build` output and the emulator:
 * test/integration/cli/workflow-manifest.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { workflowHint } from '../../../src/cli/runs.js';
import { findManifest, MANIFEST_CANDIDATES, readManifest } from '../../../src/cli/workflow-manifest.js';
import { describeWorkflow, nearWorkflows } from '../../../src/cli/workflow-names.js';
import { editDistance } from '../../../src/util/edit-distance.js';

const id = (file: string, name: string) => `workflow//./workflows/${file}//${name}`;
const IDS = [
  id('order', 'order'),
  id('order', 'orderRefund'),
  id('billing', 'reorder'),
  id('billing', 'invoice'),
  id('ship', 'Order'),
];

describe('nearWorkflows', () => {
  it('ranks another case, then a prefix, then a substring, then a few edits; the exact name is the answer, not near', () => {
    expect(nearWorkflows('order', IDS)).toEqual([
      id('ship', 'Order'),
      id('order', 'orderRefund'),
      id('billing', 'reorder'),
    ]);
    expect(nearWorkflows('ord', IDS)).toEqual([
      id('order', 'order'),
      id('ship', 'Order'),
      id('order', 'orderRefund'),
      id('billing', 'reorder'),
    ]);
    expect(nearWorkflows('ordr', IDS).slice(0, 2)).toEqual([id('order', 'order'), id('ship', 'Order')]);
    expect(nearWorkflows('invoce', IDS)).toEqual([id('billing', 'invoice')]);
    expect(nearWorkflows('shipment', IDS)).toEqual([]);
    // A full id is compared by its export name.
    expect(nearWorkflows(id('order', 'invoise'), IDS)).toEqual([id('billing', 'invoice')]);
  });

  it('counts a swap of two letters as one edit, and names a workflow by export and id', () => {
    expect(editDistance('ordre', 'order')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(describeWorkflow(id('order', 'order'))).toBe('order (workflow//./workflows/order//order)');
  });
});

describe('workflowHint (runs --workflow, nothing matched)', () => {
  const manifest = {
    path: '/app/.well-known/workflow/v1/manifest.json',
    workflows: [{ file: 'workflows/order.ts', name: 'order', workflowId: id('order', 'order') }],
  };

  it('names the near workflows of the runs read and of the manifest', () => {
    expect(workflowHint('ord', [id('billing', 'invoice')], 3, manifest)).toBe(
      'hint: no workflow is named "ord"; did you mean order (workflow//./workflows/order//order)?',
    );
    expect(workflowHint('invoce', [id('billing', 'invoice')], 3)).toBe(
      'hint: no workflow is named "invoce"; did you mean invoice (workflow//./workflows/billing//invoice)?',
    );
  });

  it('says names match exactly when nothing is near, and nothing for a workflow the app has (it has no runs yet)', () => {
    expect(workflowHint('zzz', [], 0, manifest)).toBe(
      `hint: no workflow is named "zzz" among the 0 newest runs or in ${manifest.path}; names match exactly: the export name (order) or the full id (workflow//<file>//<export>)`,
    );
    expect(workflowHint('order', [], 0, manifest)).toBeUndefined();
    expect(workflowHint(id('x', 'zzz'), [], undefined)).toBeUndefined();
  });
});

describe('the workflow manifest', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'eve-world-aws-manifest-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  };

  it('is found from a subfolder up to the project root (package.json), in the places builds write it', () => {
    write('app/package.json', '{}');
    write('app/workflows/order.ts', '');
    expect(findManifest(path.join(root, 'app', 'workflows'))).toBeUndefined();
    // Next.js puts it under app/ (a folder of the project, not the project itself).
    write(`app/${MANIFEST_CANDIDATES[1]}`, '{"workflows":{}}');
    expect(findManifest(path.join(root, 'app', 'workflows'))).toBe(path.join(root, 'app', MANIFEST_CANDIDATES[1]));
    // `wf build`'s place comes first.
    write(`app/${MANIFEST_CANDIDATES[0]}`, '{"workflows":{}}');
    expect(findManifest(path.join(root, 'app'))).toBe(path.join(root, 'app', MANIFEST_CANDIDATES[0]));
    // Not above the project root.
    write(`${MANIFEST_CANDIDATES[0]}`, '{"workflows":{}}');
    write('other/package.json', '{}');
    expect(findManifest(path.join(root, 'other'))).toBeUndefined();
  });

  it('reads every workflow with its file and export; a file that is not a manifest is a usage error naming it', () => {
    write(
      'm.json',
      JSON.stringify({
        version: '1.0.0',
        workflows: { 'workflows/order.ts': { order: { workflowId: id('order', 'order'), graph: {} }, broken: {} } },
      }),
    );
    expect(readManifest(path.join(root, 'm.json')).workflows).toEqual([
      { file: 'workflows/order.ts', name: 'order', workflowId: id('order', 'order') },
    ]);
    write('bad.json', '{not json');
    expect(() => readManifest(path.join(root, 'bad.json'))).toThrow(/bad\.json is not JSON/);
    write('other.json', '{"steps":{}}');
    expect(() => readManifest(path.join(root, 'other.json'))).toThrow(/has no "workflows" object/);
    expect(() => readManifest(path.join(root, 'missing.json'))).toThrow(
      /cannot read the workflow manifest .*missing\.json \(ENOENT\)/,
    );
    try {
      readManifest(path.join(root, 'missing.json'));
    } catch (err) {
      expect((err as { exitCode?: number }).exitCode).toBe(2);
    }
  });
});
