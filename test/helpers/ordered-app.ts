/**
 * Two builds of one workflow whose code differs, for the deployment-affinity tests
 * (test/e2e/affinity.test.ts, in-process shape; test/e2e/affinity-lambda.test.ts, Lambda shape):
 * `ordered(label)` runs step A and step B in the build's order with a hook between them, and
 * returns `{ build, order }`, so a run's result says which build's code ran each half.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { StandaloneBuilder } from '@workflow/builders';

/** The workflow's file in each build's folder. */
export const WORKFLOW_FILE = 'workflows/order.ts';

export type StepOrder = ['a', 'b'] | ['b', 'a'];

/** The workflow of build `name`: its two steps in `order`, and a hook between them. */
function source(name: string, order: StepOrder): string {
  const call = (s: string) => `order.push(await step${s.toUpperCase()}(label));`;
  return `import { createHook } from 'workflow';
async function stepA(label: string): Promise<string> {
  'use step';
  return 'a';
}
async function stepB(label: string): Promise<string> {
  'use step';
  return 'b';
}
export async function ordered(label: string): Promise<{ build: string; order: string[] }> {
  'use workflow';
  const order: string[] = [];
  ${call(order[0])}
  const hook = createHook<{ go: boolean }>({ token: 'gate:' + label });
  for await (const _ of hook) break;
  ${call(order[1])}
  return { build: '${name}', order };
}
`;
}

/** Compiles build `name` (its steps in `order`) into `<scratch>/<name>`; returns that folder. */
export async function buildOrderedApp(scratch: string, name: string, order: StepOrder): Promise<string> {
  const dir = path.join(scratch, name);
  mkdirSync(path.join(dir, 'workflows'), { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{"private":true,"type":"module"}\n');
  writeFileSync(path.join(dir, WORKFLOW_FILE), source(name, order));
  await new StandaloneBuilder({
    dirs: ['./workflows'],
    workingDir: dir,
    buildTarget: 'standalone',
    stepsBundlePath: './.well-known/workflow/v1/__step_registrations.mjs',
    workflowsBundlePath: './.well-known/workflow/v1/flow.mjs',
    webhookBundlePath: './.well-known/workflow/v1/webhook.mjs',
    workflowManifestPath: './.well-known/workflow/v1/manifest.json',
  }).build();
  return dir;
}
