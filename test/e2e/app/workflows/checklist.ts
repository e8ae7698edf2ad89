/**
 * Workflows for the end-to-end conformance suite (our port of the @workflow/world-testing
 * checklist, plus AWS-specific cases). Compiled by the Workflow DevKit builder in
 * test/e2e/build.mjs; run by the real core against eve-world-aws.
 */
import { createHook, FatalError, getStepMetadata, getWritable, RetryableError, sleep } from 'workflow';
import { start } from 'workflow/api';

async function add(a: number, b: number): Promise<number> {
  'use step';
  return a + b;
}

async function noop(): Promise<void> {
  'use step';
}

export async function addition(a: number, b: number): Promise<number> {
  'use workflow';
  return add(a, b);
}

/** Many sequential steps: each step body must run exactly once. */
export async function manySteps(n: number): Promise<number> {
  'use workflow';
  let total = 0;
  for (let i = 0; i < n; i++) total = await add(total, 1);
  return total;
}

/** Three sequential steps: with inline execution this is one flow invocation. */
export async function sequentialSteps(input: number): Promise<number> {
  'use workflow';
  const a = await add(input, 2);
  const b = await add(a, 3);
  return add(b, 5);
}

async function writeText(writable: WritableStream<Uint8Array>, text: string): Promise<string> {
  'use step';
  const writer = writable.getWriter();
  await writer.write(new TextEncoder().encode(text));
  writer.releaseLock();
  return text;
}

async function closeStream(writable: WritableStream<Uint8Array>): Promise<void> {
  'use step';
  await writable.getWriter().close();
}

export async function sequentialWithStream(): Promise<string> {
  'use workflow';
  const writable = getWritable<Uint8Array>();
  const a = await writeText(writable, 'hello');
  const b = await writeText(writable, ' world');
  await closeStream(writable);
  return a + b;
}

export async function sleepThenStep(duration: string): Promise<number> {
  'use workflow';
  await sleep(duration as '1s');
  return add(1, 2);
}

export async function fanOut(n: number): Promise<number[]> {
  'use workflow';
  return Promise.all(Array.from({ length: n }, (_, i) => add(i, i)));
}

/** Waits for `count` hook payloads and returns them in arrival order. */
export async function hookCollector(token: string, count: number): Promise<unknown[]> {
  'use workflow';
  const hook = createHook<{ value: unknown }>({ token });
  const got: unknown[] = [];
  for await (const payload of hook) {
    got.push(payload.value);
    if (got.length >= count) break;
  }
  return got;
}

async function bytesWithNulls(): Promise<Uint8Array> {
  'use step';
  return new Uint8Array([0, 1, 0, 2, 0, 0, 255, 0]);
}

export async function nullBytes(): Promise<Uint8Array> {
  'use workflow';
  return bytesWithNulls();
}

async function flakyStep(): Promise<number> {
  'use step';
  const { attempt } = getStepMetadata();
  if (attempt < 2) throw new RetryableError(`flaky attempt ${attempt}`, { retryAfter: 500 });
  return attempt;
}

async function fatalStep(): Promise<void> {
  'use step';
  throw new FatalError('fatal on purpose');
}

export async function retriableAndFatal(): Promise<{ attempts: number; fatal: string }> {
  'use workflow';
  const attempts = await flakyStep();
  try {
    await fatalStep();
    return { attempts, fatal: 'not thrown' };
  } catch (err) {
    return { attempts, fatal: (err as Error).message };
  }
}

export async function failsFatally(): Promise<void> {
  'use workflow';
  await fatalStep();
}

async function signalStep(input: { index: number; abortSignal?: AbortSignal }): Promise<number> {
  'use step';
  return input.index;
}

export async function stepsWithSignal(count: number): Promise<number> {
  'use workflow';
  const controller = new AbortController();
  let sum = 0;
  for (let index = 0; index < count; index++) sum += await signalStep({ index, abortSignal: controller.signal });
  return sum;
}

export async function parentStartsChild(): Promise<string> {
  'use workflow';
  await noop();
  const child = await start(childWorkflow, []);
  return child.runId;
}

export async function childWorkflow(): Promise<string> {
  'use workflow';
  await noop();
  return 'child done';
}

export async function grandparent(): Promise<string> {
  'use workflow';
  await noop();
  const child = await start(parentStartsChild, []);
  return child.runId;
}

async function bigOutput(size: number): Promise<Uint8Array> {
  'use step';
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + 7) & 0xff;
  return out;
}

export async function largeOutput(size: number): Promise<number> {
  'use workflow';
  const bytes = await bigOutput(size);
  let sum = 0;
  for (const b of bytes) sum = (sum + b) % 1_000_000_007;
  return sum;
}

export async function largeResult(size: number): Promise<Uint8Array> {
  'use workflow';
  return bigOutput(size);
}

/** A step that records each execution of its body (the e2e process reads the tally). */
async function countedAdd(key: string, a: number, b: number): Promise<number> {
  'use step';
  const g = globalThis as Record<string, unknown>;
  if (!g.__e2eStepTally) g.__e2eStepTally = new Map<string, number>();
  const tally = g.__e2eStepTally as Map<string, number>;
  tally.set(key, (tally.get(key) ?? 0) + 1);
  return a + b;
}

export async function countedSteps(prefix: string, n: number): Promise<number> {
  'use workflow';
  let total = 0;
  for (let i = 0; i < n; i++) total = await countedAdd(`${prefix}:seq:${i}`, total, 1);
  const fan = await Promise.all(Array.from({ length: 4 }, (_, i) => countedAdd(`${prefix}:fan:${i}`, i, 0)));
  await sleep('1s');
  return total + fan.reduce((a, b) => a + b, 0);
}

/** countedAdd whose body then takes `ms` (a slow tool call: the window in which copies and polls arrive). */
async function slowCountedAdd(key: string, a: number, b: number, ms: number): Promise<number> {
  'use step';
  const g = globalThis as Record<string, unknown>;
  if (!g.__e2eStepTally) g.__e2eStepTally = new Map<string, number>();
  const tally = g.__e2eStepTally as Map<string, number>;
  tally.set(key, (tally.get(key) ?? 0) + 1);
  await new Promise((resolve) => setTimeout(resolve, ms));
  return a + b;
}

/** countedSteps with step bodies that take `ms` each (the fault suite's clock scenario). */
export async function slowCountedSteps(prefix: string, n: number, ms: number): Promise<number> {
  'use workflow';
  let total = 0;
  for (let i = 0; i < n; i++) total = await slowCountedAdd(`${prefix}:seq:${i}`, total, 1, ms);
  const fan = await Promise.all(Array.from({ length: 4 }, (_, i) => slowCountedAdd(`${prefix}:fan:${i}`, i, 0, ms)));
  await sleep('1s');
  return total + fan.reduce((a, b) => a + b, 0);
}

/** Runs far more steps than a low WORKFLOW_MAX_EVENTS allows. */
export async function runaway(): Promise<number> {
  'use workflow';
  let total = 0;
  for (let i = 0; i < 100; i++) total = await add(total, 1);
  return total;
}

/**
 * A step whose body is counted like countedAdd, then waits until the e2e process opens its gate
 * (`globalThis.__e2eGates`, a Map of key -> Promise): a long step, as long as the test wants.
 */
async function gatedStep(key: string): Promise<string> {
  'use step';
  const g = globalThis as Record<string, unknown>;
  if (!g.__e2eStepTally) g.__e2eStepTally = new Map<string, number>();
  const tally = g.__e2eStepTally as Map<string, number>;
  tally.set(key, (tally.get(key) ?? 0) + 1);
  await (g.__e2eGates as Map<string, Promise<void>> | undefined)?.get(key);
  return key;
}

export async function gated(key: string): Promise<string> {
  'use workflow';
  return gatedStep(key);
}

/**
 * Writes `text` to the run's stream, then waits for the hook `token` before closing it: the
 * stream stays open while the run waits (cancel it there to leave a stream its writer never closed).
 */
export async function streamThenHook(token: string, text: string): Promise<string> {
  'use workflow';
  const writable = getWritable<Uint8Array>();
  await writeText(writable, text);
  const hook = createHook<{ value: string }>({ token });
  const got = await hook;
  await closeStream(writable);
  return got.value;
}

/** Writes `text` to the run's stream and completes without closing it. */
export async function streamLeftOpen(text: string): Promise<string> {
  'use workflow';
  return writeText(getWritable<Uint8Array>(), text);
}
